// The guest side of the firecracker sandbox: started by the VM's init, it connects back to the
// agent over the vsock bridge (a unix socket path in SVC_GUEST_SOCKET; inside a real VM a
// `socat UNIX-LISTEN:… VSOCK-CONNECT:2:<port>` bridge provides it, because Node has no AF_VSOCK),
// unpacks the job workspace and runs the step runner with its IPC channel relayed as frames.
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import * as tar from 'tar';
import { readFrames, writeFrame, type Frame } from './frames.ts';

const socketPath = process.env['SVC_GUEST_SOCKET'];
if (socketPath === undefined || socketPath === '') {
  process.stderr.write('svc guest: SVC_GUEST_SOCKET is required\n');
  process.exit(2);
}
const socket = connect(socketPath);
let child: ReturnType<typeof spawn> | undefined;
readFrames(socket, (frame: Frame) => {
  if (frame.t === 'start' && child === undefined) {
    void (async () => {
      if (frame.workspaceTar !== undefined) {
        await mkdir(frame.cwd, { recursive: true });
        await tar.x({ file: frame.workspaceTar, cwd: frame.cwd, strict: true });
      }
      const [file, ...args] = frame.argv;
      child = spawn(file!, args, { cwd: frame.cwd, env: frame.env, stdio: frame.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'], serialization: 'json' });
      child.stdout!.on('data', (d: Buffer) => writeFrame(socket, { t: 'out', s: 'stdout', d: d.toString('base64') }));
      child.stderr!.on('data', (d: Buffer) => writeFrame(socket, { t: 'out', s: 'stderr', d: d.toString('base64') }));
      child.on('message', (m) => writeFrame(socket, { t: 'ipc', m }));
      child.on('close', (code, signal) => {
        writeFrame(socket, { t: 'exit', code, signal });
        socket.end(() => process.exit(0));
      });
    })().catch((error: unknown) => {
      writeFrame(socket, { t: 'out', s: 'stderr', d: Buffer.from(`svc guest: ${String(error)}\n`).toString('base64') });
      writeFrame(socket, { t: 'exit', code: 127, signal: null });
      socket.end(() => process.exit(1));
    });
  } else if (frame.t === 'ipc') {
    if (child?.connected) child.send(frame.m as Parameters<NonNullable<typeof child>['send']>[0]);
  } else if (frame.t === 'signal') {
    child?.kill(frame.signal);
  }
});
socket.on('close', () => {
  child?.kill('SIGKILL');
  process.exit(0);
});
