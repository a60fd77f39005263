// The official openai npm client against a live `glia serve` on the Brown model: chat, completions,
// streaming, usage, stop strings, logprobs and typed errors. Run by ctest (server_openai_client) with
// GLIA_CLI (the glia binary) and GLIA_MODEL set; starts and stops its own server on a free port.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopServer, writeToolTemplate } from './serve.mjs';

// Without the package (scripts/install_api_clients.sh not run) the test is skipped (ctest code 77).
let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch {
  console.log('openai package not installed: run scripts/install_api_clients.sh');
  process.exit(77);
}

let server;
let client;
const model = 'brown';
const jury = ' the same time he was a few moment. Then he was a few moment, he was a few moment';

before(async () => {
  const started = await startServer(process.env.GLIA_CHAT_TEMPLATE);
  server = started.proc;
  client = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${started.port}/v1`, maxRetries: 0 });
});

after(async () => { await stopServer(server); });

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

test('chat: tool calls (a named function, a required choice), whole and streamed through the SDK', async () => {
  const template = writeToolTemplate();
  const { proc, port } = await startServer(template);
  try {
    const tc = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const tools = [{ type: 'function', function: { name: 'get_unit', strict: true,
      parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } }, required: ['unit'], additionalProperties: false } } }];
    const messages = [{ role: 'user', content: 'Which unit?' }];
    const r = await tc.beta.chat.completions.parse({
      model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_unit' } }, max_tokens: 60, seed: 3 });
    assert.equal(r.choices[0].finish_reason, 'stop');  // OpenAI's for a named function
    const call = r.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_unit');
    assert.ok(['c', 'f'].includes(call.function.parsed_arguments.unit));
    // The SDK's stream helper puts the streamed call together.
    const stream = tc.beta.chat.completions.stream({ model, messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 200, seed: 3 });
    const done = await stream.finalChatCompletion();
    assert.equal(done.choices[0].finish_reason, 'tool_calls');
    assert.equal(done.choices[0].message.tool_calls[0].function.name, 'get_unit');
    assert.ok(['c', 'f'].includes(JSON.parse(done.choices[0].message.tool_calls[0].function.arguments).unit));
    // The call and its result sent back: the next turn is accepted.
    const next = await tc.chat.completions.create({ model, max_tokens: 4, temperature: 0, tools,
      messages: [...messages, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'c' }] });
    assert.equal(next.choices[0].message.role, 'assistant');
  } finally {
    await stopServer(proc);
  }
});

test('responses: whole and streamed, as the chat endpoint answers', async () => {
  const body = { model, input: 'The jury said', instructions: 'Be brief.', max_output_tokens: 12, temperature: 0 };
  const r = await client.responses.create(body);
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  const chat = await client.chat.completions.create({ model, max_tokens: 12, temperature: 0,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'The jury said' }] });
  assert.equal(r.output_text, chat.choices[0].message.content);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, 12);
  const events = [];
  const stream = client.responses.stream(body);
  stream.on('event', (e) => events.push(e));
  await stream.done();
  assert.equal(events[0].type, 'response.created');
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const last = events[events.length - 1];
  assert.equal(last.type, 'response.incomplete');
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(deltas, r.output_text);
  assert.equal(last.response.output[0].content[0].text, r.output_text);
});

test('responses: function calls (a named function, required), whole and streamed, and their outputs sent back', async () => {
  const template = writeToolTemplate();
  const { proc, port } = await startServer(template);
  try {
    const tc = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const tools = [{ type: 'function', name: 'get_unit', strict: true,
      parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } }, required: ['unit'], additionalProperties: false } }];
    for (const tool_choice of [{ type: 'function', name: 'get_unit' }, 'required']) {
      const body = { model, input: 'Which unit?', tools, tool_choice, parallel_tool_calls: false, max_output_tokens: 120, temperature: 0 };
      const r = await tc.responses.create(body);
      assert.equal(r.status, 'completed', JSON.stringify(r));
      const calls = r.output.filter((i) => i.type === 'function_call');
      assert.equal(calls.length, 1, JSON.stringify(r));
      assert.equal(calls[0].name, 'get_unit');
      assert.match(calls[0].call_id, /^call_/);
      assert.ok(['c', 'f'].includes(JSON.parse(calls[0].arguments).unit), calls[0].arguments);
      const final = await tc.responses.stream(body).finalResponse();
      const streamed = final.output.filter((i) => i.type === 'function_call');
      assert.equal(streamed.length, 1, JSON.stringify(final));
      assert.equal(streamed[0].arguments, calls[0].arguments);
      // The call and its output sent back: the next turn is accepted and the prompt shows them.
      const next = await tc.responses.create({ model, tools, max_output_tokens: 4, temperature: 0,
        input: [{ role: 'user', content: 'Which unit?' }, calls[0], { type: 'function_call_output', call_id: calls[0].call_id, output: 'celsius' }] });
      assert.ok(next.usage.input_tokens > r.usage.input_tokens + 5, `${next.usage.input_tokens} vs ${r.usage.input_tokens}`);
    }
  } finally {
    await stopServer(proc);
  }
});

test('responses: a json_schema text format is followed', async () => {
  const r = await client.responses.create({ model, input: 'Give a number.', max_output_tokens: 60, temperature: 0,
    text: { format: { type: 'json_schema', name: 'n', schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false } } } });
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.equal(typeof JSON.parse(r.output_text).n, 'number');
  await assert.rejects(client.responses.create({ model, input: 'x', previous_response_id: 'resp_1' }),
    (e) => e instanceof OpenAI.BadRequestError && /stores no responses/.test(e.message));
  await assert.rejects(client.responses.create({ model, input: 'x', tools: [{ type: 'web_search_preview' }] }),
    (e) => e instanceof OpenAI.BadRequestError && /function tools/.test(e.message));
});

test('embeddings: the SDK asks for base64 and decodes it to the floats the server sends as JSON', async () => {
  const viaSdk = await client.embeddings.create({ model, input: ['The jury said', 'It was'] });
  assert.equal(viaSdk.data.length, 2);
  assert.equal(viaSdk.data[1].index, 1);
  const plain = await client.embeddings.create({ model, input: 'It was', encoding_format: 'float' });
  assert.deepEqual(viaSdk.data[1].embedding, plain.data[0].embedding);
  const norm = Math.sqrt(plain.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-5);
  assert.ok(plain.usage.prompt_tokens > 0);
});

test('errors are typed', async () => {
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], n: 500 }),
    (e) => e instanceof OpenAI.BadRequestError && /'n'/.test(e.message));
  await assert.rejects(client.completions.create({ model, prompt: 'x', temperature: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  const anonymous = new OpenAI({ apiKey: 'wrong', baseURL: client.baseURL, maxRetries: 0 });
  await assert.rejects(anonymous.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});
