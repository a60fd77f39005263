// The CUDA backend: weights, constants, activations and the KV cache live in device memory; ops
// are kernel launches on one stream, so nothing waits for the GPU until results are downloaded.
// A one-token step can be recorded as a CUDA graph and replayed as one submission.
//
// Ops also accept host pointers (the op-by-op harness passes its own vectors): those are staged
// through temporary device memory around the op.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/packed_weights.h"
#include "backend/ref/ref_ops.h"

namespace glia {
namespace {

using cuda::check;

// Every device allocation of every CUDA backend, so any pointer can be told from host memory.
// Buffers may outlive the backend that made them, hence one registry for the process.
struct allocation_registry {
  std::mutex mu;
  std::map<uintptr_t, size_t> blocks;  // start -> bytes

  void add(const void* p, size_t n) {
    std::lock_guard lock(mu);
    blocks[uintptr_t(p)] = n;
  }
  void remove(const void* p) {
    std::lock_guard lock(mu);
    blocks.erase(uintptr_t(p));
  }
  bool contains(const void* p) {
    std::lock_guard lock(mu);
    auto it = blocks.upper_bound(uintptr_t(p));
    if (it == blocks.begin()) return false;
    --it;
    return uintptr_t(p) < it->first + std::max<size_t>(it->second, 1);
  }
};

// Never destroyed: buffers held by other statics (a test's backend) are released at exit, after
// a function-local static registry would already be gone.
allocation_registry& registry() {
  static auto* r = new allocation_registry;
  return *r;
}

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc");
  registry().add(p, bytes);
  return p;
}

void device_free(void* p) {
  registry().remove(p);
  cudaFree(p);
}

backend_buffer device_buffer(size_t bytes) { return backend_buffer(device_alloc(bytes), bytes, device_free); }

class cuda_backend;

// The device pointers of one op's arguments: device memory as is, prepared host data as its device
// copy, other host memory copied to temporary device memory (and back for outputs) around the op.
class staging {
 public:
  explicit staging(cuda_backend& b);
  ~staging() noexcept(false);
  template <class T>
  const T* in(const T* p, size_t count) {
    return static_cast<const T*>(map(p, count * sizeof(T), true, false));
  }
  template <class T>
  T* out(T* p, size_t count) {
    return static_cast<T*>(map(p, count * sizeof(T), false, true));
  }
  template <class T>
  T* inout(T* p, size_t count) {
    return static_cast<T*>(map(p, count * sizeof(T), true, true));
  }

 private:
  void* map(const void* p, size_t bytes, bool copy_in, bool copy_out);
  struct temp {
    void* host;
    backend_buffer dev;
    bool copy_out;
  };
  cuda_backend& b_;
  std::vector<temp> temps_;
};

class cuda_backend final : public backend {
 public:
  cuda_backend(int device, bool repack) : device_(device), repack_(repack) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~cuda_backend() override {
    cudaStreamSynchronize(stream_);
    for (auto& [id, r] : recordings_) cudaGraphExecDestroy(r.exec);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  bool host_memory() const override { return false; }
  std::optional<uint64_t> available_memory() const override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
    return free;
  }
  backend_buffer alloc(size_t bytes) override { return device_buffer(bytes); }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download");
    synchronize();
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "copy");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  // Q4_0/Q8_0 matrices are repacked (packed_weights.h) unless repacking is off; others are copied
  // as stored.
  size_t prepare_weight(const weight_view& w) override {
    if (!w.data) return 0;
    if (!repack_ || !cuda::packable(w)) return keep_copy(w.data, w.row_stride * size_t(w.n_out));
    if (cuda::packed_matrix p; find_packed(w, p)) return 0;
    packed_.erase(uintptr_t(w.data));  // an earlier matrix at this address, of another shape
    std::vector<uint8_t> host(cuda::packed_bytes(w));
    cuda::pack_on_host(w, host.data());
    packed_entry e{w, device_buffer(host.size())};
    check(cudaMemcpy(e.buffer.data(), host.data(), host.size(), cudaMemcpyHostToDevice), "weight upload");
    packed_.emplace(uintptr_t(w.data), std::move(e));
    return host.size();
  }
  void prepare_data(const void* data, size_t bytes) override { keep_copy(data, bytes); }

  void get_rows(const weight_view& table, const int32_t* ids, int64_t n_ids, float* out) override {
    staging st(*this);
    cuda::get_rows(stream_, device_weights(st, table), st.in(ids, size_t(n_ids)), n_ids,
                   st.out(out, size_t(n_ids * table.n_in)));
  }

  void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) override {
    staging st(*this);
    const float* dx = st.in(x, size_t(n_tok * w.n_in));
    float* dy = st.out(y, size_t(n_tok * w.n_out));
    if (cuda::packed_matrix p; find_packed(w, p)) {
      run_packed(std::span(&p, 1), dx, n_tok, std::span(&dy, 1));
      return;
    }
    const weight_view dw = device_weights(st, w);
    if (cuda::kquant_supported(dw)) {
      run_kquant(std::span(&dw, 1), dx, n_tok, std::span(&dy, 1));
      return;
    }
    float* xr = scratch(xr_, size_t(n_tok * w.n_in));
    cuda::round_activations(stream_, w.type, dx, n_tok, w.n_in, xr);
    if (cuda::half_rows_supported(dw)) cuda::matmul_half_rows(stream_, dw, xr, n_tok, dy);
    else cuda::matmul(stream_, dw, xr, n_tok, dy);
  }

  // Repacked matrices of one type and width share one activation quantization and one launch.
  void matmul_shared(std::span<const weight_view> ws, const float* x, int64_t n_tok,
                     std::span<float* const> ys) override {
    cuda::packed_matrix ps[3];
    bool together = !ws.empty() && ws.size() <= 3;
    for (size_t i = 0; together && i < ws.size(); ++i)
      together = find_packed(ws[i], ps[i]) && ws[i].type == ws[0].type && ws[i].n_in == ws[0].n_in;
    if (!together) {
      // K-quant matrices of one width share one activation quantization.
      bool kquant = !ws.empty() && ws.size() <= 3;
      for (size_t i = 0; kquant && i < ws.size(); ++i) kquant = ws[i].n_in == ws[0].n_in && cuda::kquant_type(ws[i].type);
      if (!kquant) return backend::matmul_shared(ws, x, n_tok, ys);
      staging st(*this);
      weight_view dws[3];
      float* dys[3];
      for (size_t i = 0; i < ws.size(); ++i) {
        dws[i] = device_weights(st, ws[i]);
        dys[i] = st.out(ys[i], size_t(n_tok * ws[i].n_out));
        if (!cuda::kquant_supported(dws[i])) kquant = false;
      }
      const float* dx = st.in(x, size_t(n_tok * ws[0].n_in));
      if (kquant) run_kquant(std::span(dws, ws.size()), dx, n_tok, std::span(dys, ws.size()));
      else
        for (size_t i = 0; i < ws.size(); ++i) matmul(dws[i], dx, n_tok, dys[i]);
      return;
    }
    staging st(*this);
    const float* dx = st.in(x, size_t(n_tok * ws[0].n_in));
    float* dys[3];
    for (size_t i = 0; i < ws.size(); ++i) dys[i] = st.out(ys[i], size_t(n_tok * ws[i].n_out));
    run_packed(std::span(ps, ws.size()), dx, n_tok, std::span(dys, ws.size()));
  }

  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override {
    staging st(*this);
    const size_t count = size_t(n_rows * n);
    float* dy = x == y ? st.inout(y, count) : st.out(y, count);  // in place: one staged copy
    const float* dx = x == y ? dy : st.in(x, count);
    cuda::rms_norm(stream_, dx, w ? st.in(w, size_t(n)) : nullptr, dy, n_rows, n, eps);
  }

  void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions, const rope_params& p) override {
    staging st(*this);
    rope_params dp = p;
    if (p.freq_factors) dp.freq_factors = st.in(p.freq_factors, size_t(p.n_rot / 2));
    cuda::rope(stream_, st.inout(x, size_t(n_tok * n_head * head_dim)), n_tok, n_head, head_dim,
               st.in(positions, size_t(n_tok)), dp, ref::rope_constants_for(p));
  }

  void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
                int64_t n_tok) override {
    staging st(*this);
    const kv_layer_view dkv = device_kv(st, kv, true);
    cuda::kv_store(stream_, dkv, st.in(k, size_t(n_tok * kv.n_kv_head * kv.head_dim_k)),
                   st.in(v, size_t(n_tok * kv.n_kv_head * kv.head_dim_v)), st.in(positions, size_t(n_tok)), n_tok);
  }

  void attention(const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
                 const attention_params& p, float* out) override {
    staging st(*this);
    const kv_layer_view dkv = device_kv(st, kv, false);
    const int splits = cuda::attention_splits(n_tok, p.n_head, kv.n_slots);
    float* part = scratch(attn_, std::max<size_t>(1, cuda::attention_scratch_floats(n_tok, p.n_head, kv.head_dim_v, splits)));
    cuda::attention(stream_, dkv, st.in(q, size_t(n_tok * p.n_head * kv.head_dim_k)), st.in(positions, size_t(n_tok)),
                    n_tok, p, st.out(out, size_t(n_tok * p.n_head * kv.head_dim_v)), part, splits);
  }

  void glu(const float* gate, const float* up, float* out, int64_t n_tok, int64_t n, activation act) override {
    staging st(*this);
    const size_t count = size_t(n_tok * n);
    // An output that is also an input is staged once, in and out.
    float* dout = out == gate || out == up ? st.inout(out, count) : st.out(out, count);
    const float* dg = gate == out ? dout : st.in(gate, count);
    const float* du = up == out ? dout : up == gate ? dg : st.in(up, count);
    cuda::glu(stream_, dg, du, dout, n_tok * n, act);
  }

  void add(const float* a, const float* b, float* out, int64_t n) override {
    staging st(*this);
    // An output that is also an input is staged once, in and out.
    float* dout = out == a || out == b ? st.inout(out, size_t(n)) : st.out(out, size_t(n));
    const float* da = a == out ? dout : st.in(a, size_t(n));
    const float* db = b == out ? dout : b == a ? da : st.in(b, size_t(n));
    cuda::add(stream_, da, db, dout, n);
  }
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n) override {
    staging st(*this);
    cuda::add_bias(stream_, st.inout(x, size_t(n_rows * n)), st.in(bias, size_t(n)), n_rows, n);
  }
  void scale(float* x, float s, int64_t n) override {
    staging st(*this);
    cuda::scale(stream_, st.inout(x, size_t(n)), s, n);
  }
  void softcap(float* x, float cap, int64_t n) override {
    staging st(*this);
    cuda::softcap(stream_, st.inout(x, size_t(n)), cap, n);
  }
  void find_nonfinite(const float* x, int64_t n, nonfinite_record* record) override {
    staging st(*this);
    cuda::find_nonfinite(stream_, st.in(x, size_t(n)), n, st.out(record, 1));
  }

  bool begin_recording() override {
    if (recording_) return false;
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed) != cudaSuccess) return false;
    recording_ = true;
    record_failed_ = false;
    return true;
  }
  int end_recording() override {
    if (!recording_) return -1;
    recording_ = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    cudaGraphExec_t exec = nullptr;
    const bool ok = err == cudaSuccess && !record_failed_ && graph &&
                    cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph) cudaGraphDestroy(graph);
    graveyard_.clear();
    cudaGetLastError();  // a failed capture leaves its error behind; the caller runs the ops instead
    if (!ok) return -1;
    const int id = next_id_++;
    recordings_[id] = recorded_graph{exec, generation_};
    return id;
  }
  bool replay(int id) override {
    auto it = recordings_.find(id);
    if (it == recordings_.end() || it->second.generation != generation_) return false;
    check(cudaGraphLaunch(it->second.exec, stream_), "cudaGraphLaunch");
    return true;
  }
  void drop_recording(int id) override {
    auto it = recordings_.find(id);
    if (it == recordings_.end()) return;
    cudaStreamSynchronize(stream_);
    cudaGraphExecDestroy(it->second.exec);
    recordings_.erase(it);
  }

  // The device address of the host bytes [p, p + bytes) where one copy kept by prepare_* holds
  // them all, or null (a range that runs past its copy's end must be staged, not read beyond it).
  const void* prepared(const void* p, size_t bytes) const {
    auto it = kept_.upper_bound(uintptr_t(p));
    if (it == kept_.begin()) return nullptr;
    --it;
    const uintptr_t off = uintptr_t(p) - it->first;
    if (off >= it->second.bytes() || bytes > it->second.bytes() - off) return nullptr;
    return it->second.as<uint8_t>() + off;
  }
  bool recording() const { return recording_; }
  void mark_record_failed() { record_failed_ = true; }
  cudaStream_t stream() const { return stream_; }

 private:
  struct packed_entry {
    weight_view host;  // the matrix as prepared: a later view must match it to use the copy
    backend_buffer buffer;
  };

  bool find_packed(const weight_view& w, cuda::packed_matrix& out) const {
    auto it = packed_.find(uintptr_t(w.data));
    if (it == packed_.end()) return false;
    const weight_view& h = it->second.host;
    if (h.type != w.type || h.n_in != w.n_in || h.n_out != w.n_out || h.row_stride != w.row_stride) return false;
    out = cuda::packed_matrix{w.type, w.n_in, w.n_out, it->second.buffer.data(),
                              it->second.buffer.as<uint8_t>() + cuda::packed_scales_offset(w)};
    return true;
  }

  // Matrices of one width that kquant_supported accepts, against x quantized to Q8_K once.
  void run_kquant(std::span<const weight_view> dws, const float* dx, int64_t n_tok, std::span<float* const> dys) {
    const size_t n = size_t(n_tok * dws[0].n_in), blocks = n / 256;
    auto* xq = reinterpret_cast<int8_t*>(scratch(xq_, (n + 3) / 4));
    float* xd = scratch(xd_, blocks);
    auto* xbs = reinterpret_cast<int16_t*>(scratch(xs_, blocks * 8));  // 16 int16 sums per block
    cuda::quantize_q8_k_activations(stream_, dx, int64_t(n), xq, xd, xbs);
    for (size_t i = 0; i < dws.size(); ++i) cuda::matmul_kquant(stream_, dws[i], xq, xd, xbs, n_tok, dys[i]);
  }

  void run_packed(std::span<const cuda::packed_matrix> ps, const float* dx, int64_t n_tok, std::span<float* const> dys) {
    const size_t n = size_t(n_tok * ps[0].n_in), blocks = n / 32;
    auto* xq = reinterpret_cast<int8_t*>(scratch(xq_, (n + 3) / 4));
    float* xd = scratch(xd_, blocks);
    auto* xs = reinterpret_cast<int*>(scratch(xs_, blocks));
    cuda::quantize_q8_0_activations(stream_, dx, int64_t(n), xq, xd, xs);
    cuda::matmul_packed(stream_, ps, xq, xd, xs, n_tok, dys);
  }

  struct recorded_graph {
    cudaGraphExec_t exec;
    uint64_t generation;
  };

  size_t keep_copy(const void* data, size_t bytes) {
    if (!data || bytes == 0) return 0;
    if (prepared(data, bytes)) return 0;
    kept_.erase(uintptr_t(data));  // an earlier, shorter block at this address
    backend_buffer dev = device_buffer(bytes);
    check(cudaMemcpy(dev.data(), data, bytes, cudaMemcpyHostToDevice), "weight upload");
    kept_[uintptr_t(data)] = std::move(dev);
    return bytes;
  }

  weight_view device_weights(staging& st, const weight_view& w) {
    weight_view d = w;
    d.data = st.in(static_cast<const uint8_t*>(w.data), w.row_stride * size_t(w.n_out));
    return d;
  }

  kv_layer_view device_kv(staging& st, const kv_layer_view& kv, bool written) {
    // The kernels index rows slot-major (kv_layout's default): a view in another order is a caller's bug.
    if (kv.order != kv_order::slot_major) throw std::invalid_argument("CUDA KV ops take slot-major caches only");
    const size_t elem = kv.type == dtype::f32 ? 4 : 2;
    const size_t kb = size_t(kv.n_slots) * size_t(kv.n_kv_head) * size_t(kv.head_dim_k) * elem;
    const size_t vb = size_t(kv.n_slots) * size_t(kv.n_kv_head) * size_t(kv.head_dim_v) * elem;
    kv_layer_view d = kv;
    if (written) {
      d.k = st.inout(static_cast<uint8_t*>(kv.k), kb);
      d.v = st.inout(static_cast<uint8_t*>(kv.v), vb);
      d.slot_pos = st.inout(kv.slot_pos, size_t(kv.n_slots));
    } else {
      d.k = const_cast<uint8_t*>(st.in(static_cast<const uint8_t*>(kv.k), kb));
      d.v = const_cast<uint8_t*>(st.in(static_cast<const uint8_t*>(kv.v), vb));
      d.slot_pos = const_cast<int32_t*>(st.in(kv.slot_pos, size_t(kv.n_slots)));
    }
    return d;
  }

  // Backend-owned scratch that only grows; growing invalidates recordings (they hold its address).
  float* scratch(backend_buffer& buf, size_t floats) {
    if (buf.bytes() < floats * sizeof(float)) {
      // Freeing waits for the device, which a stream being recorded must not: the old buffer
      // waits in the graveyard until the recording ends.
      if (recording_) {
        record_failed_ = true;
        graveyard_.push_back(std::move(buf));
      } else {
        synchronize();
      }
      buf = device_buffer(std::max(floats * sizeof(float), buf.bytes() * 2));
      ++generation_;
    }
    return buf.as<float>();
  }

  int device_;
  bool repack_;
  cudaStream_t stream_ = nullptr;
  std::map<uintptr_t, packed_entry> packed_;  // host start -> repacked device copy
  std::map<uintptr_t, backend_buffer> kept_;  // host start -> device copy
  backend_buffer xr_, attn_, xq_, xd_, xs_;
  std::vector<backend_buffer> graveyard_;
  std::map<int, recorded_graph> recordings_;
  int next_id_ = 0;
  uint64_t generation_ = 0;
  bool recording_ = false, record_failed_ = false;
};

staging::staging(cuda_backend& b) : b_(b) {}

staging::~staging() noexcept(false) {
  bool any_out = false;
  for (auto& t : temps_)
    if (t.copy_out) {
      check(cudaMemcpyAsync(t.host, t.dev.data(), t.dev.bytes(), cudaMemcpyDeviceToHost, b_.stream()), "staging out");
      any_out = true;
    }
  if (!temps_.empty() || any_out) check(cudaStreamSynchronize(b_.stream()), "staging sync");
}

void* staging::map(const void* p, size_t bytes, bool copy_in, bool copy_out) {
  if (!p || bytes == 0) return const_cast<void*>(p);
  if (const void* d = b_.prepared(p, bytes)) return const_cast<void*>(d);
  if (registry().contains(p)) return const_cast<void*>(p);
  if (b_.recording()) b_.mark_record_failed();  // host memory cannot be part of a recording
  temp t{const_cast<void*>(p), device_buffer(bytes), copy_out};
  if (copy_in) check(cudaMemcpyAsync(t.dev.data(), p, bytes, cudaMemcpyHostToDevice, b_.stream()), "staging in");
  void* d = t.dev.data();
  temps_.push_back(std::move(t));
  return d;
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device is usable (") + cudaGetErrorString(err) + ")";
  }
  if (n == 0) return "no CUDA device was found";
  return "";
}

std::unique_ptr<backend> make_cuda_backend(int device, bool repack_weights) {
  if (!cuda_unavailable_reason().empty()) return nullptr;
  return std::make_unique<cuda_backend>(device, repack_weights);
}

cuda_device_facts cuda_describe_device(int device) {
  cuda_device_facts f;
  if (!cuda_unavailable_reason().empty()) return f;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  f.name = prop.name;
  check(cudaMemGetInfo(&f.free_bytes, &f.total_bytes), "cudaMemGetInfo");
  // A device-to-device copy far larger than the L2, best of several: bytes read plus written.
  const size_t bytes = std::min<size_t>(size_t(1) << 30, f.free_bytes / 4);
  constexpr int copies = 8;  // the first one warms up and is not timed
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMemset(a, 1, bytes), "cudaMemset");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best_ms = 1e30f;
  for (int i = 0; i < copies; ++i) {
    cudaEventRecord(e0);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i > 0) best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  f.copy_bytes_per_second = 2.0 * double(bytes) / (double(best_ms) * 1e-3);
  f.copy_bytes = bytes;
  f.copies_timed = copies - 1;
  return f;
}

}  // namespace glia
