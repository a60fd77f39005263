// The official Anthropic npm client (@anthropic-ai/sdk, what Claude Code and most Anthropic apps are
// built on) against a live `glia serve` on the Brown model: /v1/messages whole and streamed (the SDK's
// own stream accumulator puts the events together), stop sequences, forced tool use, tool results sent
// back, token counting and typed errors. Run by ctest (server_anthropic_client) with GLIA_CLI and
// GLIA_MODEL set; starts and stops its own servers on free ports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopServer, writeToolTemplate } from './serve.mjs';

// Without the package (scripts/install_api_clients.sh not run) the test is skipped (ctest code 77).
let Anthropic;
let OpenAI;
try {
  ({ default: Anthropic } = await import('@anthropic-ai/sdk'));
  ({ default: OpenAI } = await import('openai'));
} catch {
  console.log('client packages not installed: run scripts/install_api_clients.sh');
  process.exit(77);
}

const template = writeToolTemplate();

let server;
let port;
let client;
const model = 'brown';

before(async () => {
  ({ proc: server, port } = await startServer(template));
  // The SDK sends the key as x-api-key.
  client = new Anthropic({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
});

after(async () => { await stopServer(server); });

const textOf = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

test('a message answers as the chat endpoint does (system prompt, merged user turns, greedy)', async () => {
  const m = await client.messages.create({ model, max_tokens: 12, temperature: 0, system: 'Be brief.',
    messages: [{ role: 'user', content: 'The jury' }, { role: 'user', content: [{ type: 'text', text: 'said' }] }] });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.usage.output_tokens, 12);
  const openai = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  const chat = await openai.chat.completions.create({ model, max_tokens: 12, temperature: 0,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'The jury\nsaid' }] });
  assert.equal(textOf(m), chat.choices[0].message.content);
  assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, chat.usage.prompt_tokens);
  const counted = await client.messages.countTokens({ model, system: 'Be brief.',
    messages: [{ role: 'user', content: 'The jury' }, { role: 'user', content: 'said' }] });
  assert.equal(counted.input_tokens, chat.usage.prompt_tokens);
});

test('a streamed message is the whole one, put together by the SDK', async () => {
  const body = { model, max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: 'The jury said' }] };
  const whole = await client.messages.create(body);
  const stream = client.messages.stream(body);
  let streamed = '';
  stream.on('text', (t) => { streamed += t; });
  const final = await stream.finalMessage();
  assert.equal(streamed, textOf(whole));
  assert.deepEqual(final.content, whole.content);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

test('a stop sequence ends the message and is named', async () => {
  const body = { model, max_tokens: 24, temperature: 0, messages: [{ role: 'user', content: 'The jury said' }] };
  const free = textOf(await client.messages.create(body));
  const words = free.trim().split(/\s+/);
  assert.ok(words.length >= 3, free);
  const stop = words[2];
  const m = await client.messages.create({ ...body, stop_sequences: ['no such text', stop] });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
  assert.equal(textOf(m), free.slice(0, free.indexOf(stop)));
  const final = await client.messages.stream({ ...body, stop_sequences: [stop] }).finalMessage();
  assert.equal(final.stop_reason, 'stop_sequence');
  assert.equal(final.stop_sequence, stop);
});

test('forced tool use comes back as tool_use blocks, whole and streamed; a tool result goes back', async () => {
  const tools = [{ name: 'get_unit', description: 'The unit to use',
    input_schema: { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } }, required: ['unit'] } }];
  const messages = [{ role: 'user', content: 'Which unit?' }];
  for (const tool_choice of [{ type: 'tool', name: 'get_unit' }, { type: 'any', disable_parallel_tool_use: true }]) {
    const body = { model, max_tokens: 120, temperature: 0, tools, tool_choice, messages };
    const m = await client.messages.create(body);
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
    const uses = m.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(m));
    assert.equal(uses[0].name, 'get_unit');
    assert.match(uses[0].id, /^toolu_/);
    assert.ok(['c', 'f'].includes(uses[0].input.unit), JSON.stringify(uses[0]));
    const final = await client.messages.stream(body).finalMessage();
    const streamedUses = final.content.filter((b) => b.type === 'tool_use');
    assert.equal(streamedUses.length, 1, JSON.stringify(final));
    assert.deepEqual(streamedUses[0].input, uses[0].input);
    assert.equal(final.stop_reason, 'tool_use');
    // The call and its result sent back: the prompt shows the result.
    const next = { model, tools, messages: [...messages, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: 'celsius' }] }] };
    const before = await client.messages.countTokens({ model, tools, messages });
    const after = await client.messages.countTokens(next);
    assert.ok(after.input_tokens > before.input_tokens + 3, `${after.input_tokens} vs ${before.input_tokens}`);
    const reply = await client.messages.create({ ...next, max_tokens: 4, temperature: 0 });
    assert.equal(reply.role, 'assistant');
  }
});

test('models: the list and one model, in Anthropic\'s shape', async () => {
  const page = await client.models.list();
  assert.equal(page.data.length, 1);
  const m = page.data[0];
  assert.equal(m.type, 'model');
  assert.equal(m.display_name, m.id);
  assert.ok(!Number.isNaN(Date.parse(m.created_at)), m.created_at);
  const one = await client.models.retrieve(m.id);
  assert.equal(one.id, m.id);
});

test('errors are typed', async () => {
  await assert.rejects(client.messages.create({ model, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] }),
  (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.type === 'invalid_request_error' && /image/.test(e.message));
  await assert.rejects(client.messages.create({ model, max_tokens: 4, messages: [{ role: 'system', content: 'x' }] }),
    (e) => e instanceof Anthropic.BadRequestError && /role/.test(e.message));
  const wrongKey = new Anthropic({ apiKey: 'wrong', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
  await assert.rejects(wrongKey.messages.create({ model, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error');
});
