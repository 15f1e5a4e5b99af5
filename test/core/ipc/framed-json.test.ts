// The step runner's socket transport: the frame codec (split and joined chunks, oversize,
// empty, non-UTF-8, non-JSON and truncated frames refused with their reason), and both ends over
// real unix sockets: the runner's transport (agent/runner/transport.ts) against a listening
// server, and the container sandbox's listener (socket-ipc.ts) against a real child process.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { encodeFrame, FrameDecoder, framedSocket } from '../../../core/ipc/framed-json.ts';
import { openRunnerTransport } from '../../../agent/runner/transport.ts';
import { spawnHostProcess } from '../../../plugins/sandboxes/shared/child.ts';
import { listenRunnerSocket } from '../../../plugins/sandboxes/container/socket-ipc.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-ipc-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const header = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
};
/** Everything `decoder` delivers for `chunk`. */
const decode = (decoder: FrameDecoder, chunk: Buffer) => {
  const out: unknown[] = [];
  decoder.push(chunk, (m) => out.push(m));
  return out;
};
const refused = (fn: () => unknown, reason: RegExp) => {
  try {
    fn();
  } catch (error) {
    return { code: (error as { code?: string }).code, message: (error as Error).message, ok: reason.test((error as Error).message) };
  }
  return { code: undefined, message: 'did not throw', ok: false };
};

t.test('frames round-trip whole, split byte by byte, and several to a chunk', async (t) => {
  const messages = [{ type: 'runner.ready', pid: 1 }, { type: 'runner.log', text: 'héllo ✓ '.repeat(1000) }, [1, 2], 'plain', null];
  const wire = Buffer.concat(messages.map((m) => encodeFrame(m)));
  t.same(decode(new FrameDecoder(), wire), messages, 'one chunk with every frame');
  const byByte = new FrameDecoder();
  const got: unknown[] = [];
  for (const byte of wire) got.push(...decode(byByte, Buffer.from([byte])));
  t.same(got, messages, 'one byte at a time');
  byByte.end();
  t.pass('a clean end after whole frames');
});

t.test('bad frames are refused with their reason', async (t) => {
  t.match(refused(() => encodeFrame(undefined), /a undefined is not a JSON value/), { ok: true, code: 'SVC_ERR_RUNNER_IPC_FRAME' });
  t.match(refused(() => encodeFrame({ text: 'x'.repeat(100) }, 50), /more than the 50 byte limit/), { ok: true, code: 'SVC_ERR_RUNNER_IPC_FRAME' }, 'an oversize message is not sent');
  t.match(refused(() => decode(new FrameDecoder(1024), header(1025)), /announces 1025 bytes, more than the 1024 byte limit/), { ok: true }, 'an oversize frame is refused from its header alone');
  t.match(refused(() => decode(new FrameDecoder(), header(0)), /empty frame/), { ok: true });
  t.match(refused(() => decode(new FrameDecoder(), Buffer.concat([header(2), Buffer.from([0xc3, 0x28])])), /not valid UTF-8/), { ok: true });
  t.match(refused(() => decode(new FrameDecoder(), Buffer.concat([header(5), Buffer.from('{"a":')])), /5 byte payload is not JSON/), { ok: true });
  const partial = new FrameDecoder();
  decode(partial, Buffer.concat([header(10), Buffer.from('{"a"')]));
  t.match(refused(() => partial.end(), /closed inside a frame \(4 of 10 payload bytes arrived\)/), { ok: true });
  const failed = new FrameDecoder();
  refused(() => decode(failed, header(0)), /./);
  t.match(refused(() => decode(failed, encodeFrame({ ok: 1 })), /already failed/), { ok: true }, 'nothing is read after a bad frame');
  const before: unknown[] = [];
  const mixed = refused(() => new FrameDecoder().push(Buffer.concat([encodeFrame({ n: 1 }), encodeFrame({ n: 2 }), header(0)]), (m) => before.push(m)), /empty frame/);
  t.ok(mixed.ok, 'a bad frame after good ones in one chunk is refused');
  t.same(before, [{ n: 1 }, { n: 2 }], 'the good frames before it were delivered');
});

/** A server on a fresh socket path; each connection is handed to `onConnection`. */
async function server(name: string, onConnection: (socket: Socket) => void) {
  const path = join(dir, name);
  const srv = createServer(onConnection);
  await new Promise<void>((r) => srv.listen(path, r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  return path;
}

t.test('the runner transport: messages both ways, then the agent closes', async (t) => {
  const fromRunner: unknown[] = [];
  const path = await server('a.sock', (socket) => {
    const peer = framedSocket(socket, {
      message: (m) => {
        fromRunner.push(m);
        if ((m as { type: string }).type === 'runner.ready') peer.send({ type: 'runner.cancel', reason: 'x', force: false }, () => peer.close());
      },
      error: () => undefined,
      close: () => undefined,
    });
  });
  const transport = openRunnerTransport({ SVC_RUNNER_IPC_SOCKET: path })!;
  t.equal(transport.name, `socket:${path}`);
  const got: unknown[] = [];
  transport.onMessage((m) => got.push(m));
  const gone = new Promise<string>((r) => transport.onDisconnect(r));
  transport.send({ type: 'runner.ready', pid: 7 });
  t.equal(await gone, 'the agent closed the IPC socket', 'the peer disconnect is reported');
  t.same(fromRunner, [{ type: 'runner.ready', pid: 7 }]);
  t.same(got, [{ type: 'runner.cancel', reason: 'x', force: false }]);
  const sent = await new Promise<string>((r) => transport.send({ late: true }, () => r('done called')));
  t.equal(sent, 'done called', 'a send after the disconnect completes without throwing');
});

t.test('the runner transport: a malformed frame from the agent ends the channel, saying why', async (t) => {
  const path = await server('b.sock', (socket) => socket.write(Buffer.concat([header(3), Buffer.from('{x}')])));
  const transport = openRunnerTransport({ SVC_RUNNER_IPC_SOCKET: path })!;
  const reason = await new Promise<string>((r) => transport.onDisconnect(r));
  t.match(reason, /runner IPC frame refused: the 3 byte payload is not JSON/);
});

t.test('the runner transport: no agent listening', async (t) => {
  const transport = openRunnerTransport({ SVC_RUNNER_IPC_SOCKET: join(dir, 'nobody.sock') })!;
  const reason = await new Promise<string>((r) => transport.onDisconnect(r));
  t.match(reason, /cannot connect to the agent's IPC socket .*nobody\.sock: .*ENOENT/);
});

t.test("the sandbox's listener against a real process: queued sends, messages, a bad frame said on stderr", async (t) => {
  const scratch = await mkdtemp(join(dir, 's-'));
  const socket = await listenRunnerSocket(scratch, 1024);
  // A stand-in runner: says ready, echoes the first message, then sends a frame over the limit.
  const code = `
    const net = require('node:net');
    const s = net.connect(process.env.SOCK);
    const frame = (o) => { const p = Buffer.from(JSON.stringify(o)); const h = Buffer.alloc(4); h.writeUInt32BE(p.length); return Buffer.concat([h, p]); };
    s.write(frame({ type: 'runner.ready', pid: process.pid }));
    let buf = Buffer.alloc(0);
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 4 || buf.length < 4 + buf.readUInt32BE(0)) return;
      const m = JSON.parse(buf.subarray(4, 4 + buf.readUInt32BE(0)).toString());
      s.write(frame({ echo: m }));
      const h = Buffer.alloc(4); h.writeUInt32BE(5000); s.write(h);
    });
    s.on('close', () => process.exit(0));
  `;
  const proc = socket.attach(spawnHostProcess({ argv: [process.execPath, '-e', code], env: { SOCK: socket.path }, cwd: scratch }));
  proc.send!({ type: 'runner.start', early: true });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const messages: unknown[] = [];
  proc.onMessage!((m) => messages.push(m));
  const exit = await proc.exited;
  t.equal(exit.code, 0, 'the stand-in saw its connection closed');
  t.match(messages[0], { type: 'runner.ready' });
  t.same(messages[1], { echo: { type: 'runner.start', early: true } }, 'a message sent before the runner connected was delivered');
  t.equal(messages.length, 2);
  t.match(stderr, /svc agent: runner IPC frame refused: the frame announces 5000 bytes, more than the 1024 byte limit; the IPC connection to the step runner is closed/);
  await socket.close();
});

t.test('a socket path too long for a unix socket is refused before anything runs', async (t) => {
  await t.rejects(listenRunnerSocket(join(dir, 'x'.repeat(120))), { code: 'SVC_ERR_SANDBOX_IPC', message: /more than the 107 a unix socket allows/ });
});
