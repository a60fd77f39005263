// The op interface between the model (which knows families and layers) and kernels (which know
// types and loops). Every op has a reference implementation in backend/ref (plain scalar loops,
// obviously correct) and optimized twins (backend/cpu, backend/cuda); tests/backend_ops compares them.
//
// Shapes are written row-major with the fastest dimension last: x [n_tok, n] means n_tok rows of n
// contiguous floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "backend/op_types.h"
#include "core/status.h"
#include "quant/types.h"

namespace glia {

// Memory from backend::alloc: host memory for the host backends, device memory for a device backend.
// Owns it; move-only.
class backend_buffer {
 public:
  using release_fn = void (*)(void* data);
  backend_buffer() = default;
  backend_buffer(void* data, size_t bytes, release_fn release) : data_(data), bytes_(bytes), release_(release) {}
  backend_buffer(backend_buffer&& o) noexcept { swap(o); }
  backend_buffer& operator=(backend_buffer&& o) noexcept {
    backend_buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  backend_buffer(const backend_buffer&) = delete;
  backend_buffer& operator=(const backend_buffer&) = delete;
  ~backend_buffer() {
    if (data_ && release_) release_(data_);
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void swap(backend_buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(release_, o.release_);
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
  release_fn release_ = nullptr;
};

class backend {
 public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;
  // The instruction set of the CPU kernels this backend runs ("avx2", "scalar", ...); "" for
  // backends that compute elsewhere.
  virtual std::string cpu_isa() const { return {}; }

  // --- Memory. Every float/int pointer an op takes may point into memory from alloc; a device
  // backend also accepts host pointers (it copies them in and out around the op: correct, slow,
  // meant for tests). The defaults are the host backends' (ordinary memory, memcpy).

  // True when alloc returns host memory the caller may read and write directly.
  virtual bool host_memory() const { return true; }
  // Bytes alloc could still hand out (host: available system memory), when known.
  virtual std::optional<uint64_t> available_memory() const;
  // `bytes` of memory (64-byte aligned), contents unspecified.
  virtual backend_buffer alloc(size_t bytes);
  // Host -> backend memory. May return before the copy is done; src must stay valid until the
  // next download or synchronize.
  virtual void upload(void* dst, const void* src, size_t bytes);
  // Backend memory -> host, after every op issued before it.
  virtual void download(void* dst, const void* src, size_t bytes);
  // Within backend memory, in op order.
  virtual void copy(void* dst, const void* src, size_t bytes);
  // Waits for every op issued so far.
  virtual void synchronize() {}
  // Constant host data the ops will read (norm weights, biases, rope frequency factors, the token
  // embedding table): a device backend keeps a copy and later ops given a pointer into
  // [data, data + bytes) read that copy. data must stay valid while the backend is used.
  virtual void prepare_data(const void* /*data*/, size_t /*bytes*/) {}

  // *record (backend memory) = the first non-finite element of x [n] and its value, or index -1.
  // Issued like any op: a device backend does not wait for it.
  virtual void find_nonfinite(const float* x, int64_t n, nonfinite_record* record);

  // --- Recording: a device backend can record the ops issued between begin_recording and
  // end_recording (not running them) and replay them later as one submission (a CUDA graph), with
  // the same pointers and sizes; data in the buffers (tokens, positions) may change in between.
  // begin_recording returns false where the backend cannot record (the caller then issues ops as
  // usual). end_recording returns the recording's id (-1 when it failed).
  virtual bool begin_recording() { return false; }
  virtual int end_recording() { return -1; }
  // Runs a recording. False when it is no longer valid (the backend reallocated memory it refers
  // to, or forgot it): the caller records again.
  virtual bool replay(int /*id*/) { return false; }
  // Forgets a recording (its memory may be reused).
  virtual void drop_recording(int /*id*/) {}

  // out[t, :] = dequantized row ids[t] of `table` (embedding lookup).
  virtual void get_rows(const weight_view& table, const int32_t* ids, int64_t n_ids, float* out) = 0;

  // Readies a weight matrix for many matmuls, e.g. repacks it into the layout the backend's kernels
  // read fastest (a copy the backend keeps; later matmuls with a view of the same data and shape use
  // it). Optional: matmul gives the same bits with or without it. w's data must stay valid while
  // the backend is used. Returns the bytes the backend now holds for w (0: nothing to prepare).
  virtual size_t prepare_weight(const weight_view& /*w*/) { return 0; }

  // y [n_tok, w.n_out] = x [n_tok, w.n_in] . w^T. Activations are converted to the weight type's
  // dot_type first (see quant/types.h). Row t of y never depends on the other rows (batch invariance).
  virtual void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) = 0;

  // ys[i] [n_tok, ws[i].n_out] = x . ws[i]^T for matrices with the same n_in that read the same input
  // (q, k and v; gate and up): the same bits as one matmul each, which is what this default does; a
  // backend may convert x once and run all of them as one job.
  virtual void matmul_shared(std::span<const weight_view> ws, const float* x, int64_t n_tok,
                             std::span<float* const> ys) {
    for (size_t i = 0; i < ws.size(); ++i) matmul(ws[i], x, n_tok, ys[i]);
  }

  // out [n_tok, gate.n_out] = act(x . gate^T) * (x . up^T): a feed-forward's gate and up
  // projections and their activation in one op; up_out [n_tok, up.n_out] is room for the up
  // projection (overwritten). `then`: the matrices the caller multiplies next, hinted to
  // prefetch_weights once the projections are done. The same bits as matmul_shared,
  // prefetch_weights and glu, which is what this default does; a backend may apply the activation to
  // each block of outputs while it is still in cache.
  virtual void matmul_glu(const weight_view& gate, const weight_view& up, const float* x, int64_t n_tok,
                          activation act, float* out, float* up_out, std::span<const weight_view> then) {
    const weight_view ws[] = {gate, up};
    float* const ys[] = {out, up_out};
    matmul_shared(ws, x, n_tok, ys);
    prefetch_weights(then);
    glu(out, up_out, out, n_tok, gate.n_out, act);
  }

  // A hint that the caller's next matmul (or matmul_shared) reads these matrices: a backend may start
  // bringing them into cache while the caller does other work in between (norms, attention). No
  // effect on any result.
  virtual void prefetch_weights(std::span<const weight_view> /*next*/) {}

  // y [n_rows, n] = x / rms(x) * w (w [n], or no weight when null). In place allowed.
  virtual void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) = 0;

  // x [n_tok, n_head, head_dim] rotated in place; positions [n_tok].
  virtual void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
                    const rope_params& p) = 0;

  // The element order of the KV caches made for this backend (kv_cache asks at creation). kv_store
  // and attention take views in this order (the CPU and reference backends take any order).
  virtual kv_order kv_layout() const { return kv_order::slot_major; }

  // Writes k [n_tok, n_kv_head, head_dim_k] and v [n_tok, n_kv_head, head_dim_v] into the slots of
  // their positions (slot = pos % n_slots).
  virtual void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
                        int64_t n_tok) = 0;

  // out [n_tok, n_head, head_dim_v] = softmax(mask(softcap(scale * q . K^T))) . V over the cached
  // slots; query t at positions[t] sees a slot whose position p satisfies p <= positions[t] (and the
  // window). GQA: query head h reads kv head h / (n_head / n_kv_head). q [n_tok, n_head, head_dim_k].
  virtual void attention(const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
                         const attention_params& p, float* out) = 0;

  // out [n_tok, n] = act(gate) * up.
  virtual void glu(const float* gate, const float* up, float* out, int64_t n_tok, int64_t n, activation act) = 0;

  // out[i] = a[i] + b[i] for i < n.
  virtual void add(const float* a, const float* b, float* out, int64_t n) = 0;
  // x [n_rows, n] += bias [n].
  virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n) = 0;
  // x[i] *= s.
  virtual void scale(float* x, float s, int64_t n) = 0;
  // x[i] = cap * tanh(x[i] / cap).
  virtual void softcap(float* x, float cap, int64_t n) = 0;
};

// Index of the first non-finite element of x [n] in host memory, or -1 (backend::find_nonfinite's
// scan, which a host backend may split over threads).
int64_t first_nonfinite(const float* x, int64_t n);

// Backends by name: "ref" (scalar reference), "cpu" (optimized, multithreaded), "cuda" (NVIDIA GPU).
// n_threads <= 0 means one per hardware core. repack_weights = false makes the CPU backend's
// prepare_weight a no-op (its kernels then read the file's layout; same bits, slower).
std::unique_ptr<backend> make_ref_backend();
std::unique_ptr<backend> make_cpu_backend(int n_threads, bool repack_weights = true);
// The CPU backend with kernels of at most instruction set `isa` (one of cpu_isa_names): to compare
// them on one machine, or to step around one. An ISA this CPU cannot run is an error, not a silent
// fallback.
inline constexpr const char* cpu_isa_names[] = {"best", "avx512amx", "avx512vnni", "avx2", "neon", "scalar"};
result<std::unique_ptr<backend>> make_cpu_backend(int n_threads, bool repack_weights, const std::string& isa);

// CUDA devices this process can use (0 when the build has no CUDA or no device/driver is present).
int cuda_device_count();
// Why the CUDA backend cannot start here, or "" when it can.
std::string cuda_unavailable_reason();
// The CUDA backend on device `device` (nullptr when cuda_unavailable_reason() is not empty).
// repack_weights = false keeps every matrix in the file's layout (generic kernels; same results
// within float reordering, slower).
std::unique_ptr<backend> make_cuda_backend(int device = 0, bool repack_weights = true);
// The device's name and its measured device-memory read bandwidth in bytes/s (a large copy,
// bytes read + written over the time), for bandwidth fractions; 0 without a device.
struct cuda_device_facts {
  std::string name;
  double copy_bytes_per_second = 0.0;
  size_t copy_bytes = 0;  // the copy the bandwidth was measured with, and how many were timed
  int copies_timed = 0;
  size_t free_bytes = 0, total_bytes = 0;
};
cuda_device_facts cuda_describe_device(int device = 0);

// A backend by name: "cpu", "ref", "cuda", or "auto" (cuda when a CUDA device is present, else cpu).
// cpu_isa other than "best" caps the CPU kernels (see make_cpu_backend) and makes "auto" mean cpu.
// Errors name the backends there are, or why CUDA cannot start.
result<std::unique_ptr<backend>> make_backend(const std::string& name, int n_threads, bool repack_weights = true,
                                              const std::string& cpu_isa = "best");

}  // namespace glia
