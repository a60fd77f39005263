// Starting and stopping a `glia serve` for the client tests (GLIA_CLI: the binary, GLIA_MODEL: the model).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A small Hermes-style template (the Brown model's context is 256 tokens): tool names in, calls out
// in <tool_call> tags, earlier calls and tool results shown. Returns its path.
export function writeToolTemplate() {
  const template = join(mkdtempSync(join(tmpdir(), 'glia-tools-')), 'tools.jinja');
  writeFileSync(template, "{%- if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}" +
    "{%- for m in messages %}{{ m.role }}: {{ m.content or '' }}" +
    "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}\n{% endfor %}" +
    "{%- if add_generation_prompt %}assistant:{% endif %}");
  return template;
}

// Starts glia serve with a chat template; resolves to the process and its port.
export async function startServer(template) {
  const proc = spawn(process.env.GLIA_CLI, ['serve', '-m', process.env.GLIA_MODEL, '--port', '0', '-t', '1',
    '--kv-type', 'f32', '--api-key', 'test-key', '--chat-template', template],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error('no listening line: ' + log)), 30000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/glia serve: listening on http:\/\/127\.0\.0\.1:(\d+)\n/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => reject(new Error(`server exited (${code}): ${log}`)));
  });
  return { proc, port };
}

export async function stopServer(proc) {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    proc.kill('SIGTERM');
    await exited;
  }
}

