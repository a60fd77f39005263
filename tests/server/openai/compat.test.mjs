// The official openai npm client against a live `glia serve` on the Brown model: chat, completions,
// streaming, usage, stop strings, logprobs and typed errors. Run by ctest (server_openai_client) with
// GLIA_CLI (the glia binary) and GLIA_MODEL set; starts and stops its own server on a free port.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

// Without the package (scripts/install_openai_client.sh not run) the test is skipped (ctest code 77).
let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch {
  console.log('openai package not installed: run scripts/install_openai_client.sh');
  process.exit(77);
}

let server;
let client;
const model = 'brown';
const jury = ' the same time he was a few moment. Then he was a few moment, he was a few moment';

before(async () => {
  server = spawn(process.env.GLIA_CLI, ['serve', '-m', process.env.GLIA_MODEL, '--port', '0', '-t', '1',
    '--kv-type', 'f32', '--api-key', 'test-key', '--chat-template', process.env.GLIA_CHAT_TEMPLATE],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error('no listening line: ' + log)), 30000);
    server.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/glia serve: listening on http:\/\/127\.0\.0\.1:(\d+)\n/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    server.on('exit', (code) => reject(new Error(`server exited (${code}): ${log}`)));
  });
  client = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

test('models list', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, 'brown-q8_0.gguf');
});

test('completion: golden greedy text and usage', async () => {
  const r = await client.completions.create({ model, prompt: 'The jury said', max_tokens: 32, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, jury);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual(r.usage, { prompt_tokens: 6, completion_tokens: 32, total_tokens: 38 });
});

test('completion: streaming with usage equals the whole answer', async () => {
  const stream = await client.completions.create({
    model, prompt: 'The jury said', max_tokens: 32, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) { text += c.text; if (c.finish_reason) finish = c.finish_reason; }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, jury);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 32);
});

test('chat: whole and streamed, with a stop string', async () => {
  const messages = [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'What did the jury say?' }];
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  const text = whole.choices[0].message.content;
  assert.ok(whole.usage.prompt_tokens > 10);
  const stream = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, text);
  // Stop at the third character of the answer: nothing from the stop string on comes back.
  if (text.length > 4) {
    const stop = text.slice(2, 4);
    const cut = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stop: [stop] });
    assert.equal(cut.choices[0].message.content, text.slice(0, text.indexOf(stop)));
    assert.equal(cut.choices[0].finish_reason, 'stop');
  }
});

test('chat: logprobs', async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const e of content) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 2);
    assert.equal(e.top_logprobs[0].token, e.token);
  }
});

test('chat: structured output (response_format json_schema, the SDK parsing the reply)', async () => {
  const schema = {
    type: 'object',
    properties: { verdict: { type: 'string', enum: ['guilty', 'not guilty'] }, jurors: { type: 'integer', minimum: 1, maximum: 12 } },
    required: ['verdict', 'jurors'],
    additionalProperties: false,
  };
  const r = await client.beta.chat.completions.parse({
    model, messages: [{ role: 'user', content: 'What did the jury decide?' }], max_tokens: 60, temperature: 0.8, seed: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'decision', schema, strict: true } },
  });
  const reply = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual(Object.keys(reply.parsed), ['verdict', 'jurors']);
  assert.ok(['guilty', 'not guilty'].includes(reply.parsed.verdict));
  assert.ok(Number.isInteger(reply.parsed.jurors) && reply.parsed.jurors >= 1 && reply.parsed.jurors <= 12);
  const any = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Say it in JSON.' }], max_tokens: 100, temperature: 0, response_format: { type: 'json_object' },
  });
  if (any.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(any.choices[0].message.content), 'object');
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'email', pattern: '(?=a)' } } },
  }), (e) => e instanceof OpenAI.BadRequestError && /response_format/.test(e.message));
});

test('errors are typed', async () => {
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], n: 3 }),
    (e) => e instanceof OpenAI.BadRequestError && /'n'/.test(e.message));
  await assert.rejects(client.completions.create({ model, prompt: 'x', temperature: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  const anonymous = new OpenAI({ apiKey: 'wrong', baseURL: client.baseURL, maxRetries: 0 });
  await assert.rejects(anonymous.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});
