// Starting and stopping a `glia serve` for the client tests (GLIA_CLI: the binary, GLIA_MODEL: the model).
import { spawn } from 'node:child_process';

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

