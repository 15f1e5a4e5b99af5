// The agent's end of the step runner's socket transport (agent/runner/transport.ts): a unix
// socket in the job's scratch directory, which the container sandbox bind-mounts at the same
// path (a docker daemon on this host sees host paths). The runner connects once; the first
// connection is the runner's and the socket file is removed as soon as it arrives (nothing else
// in the container can connect later), and in any case when the job's process exits.
// Messages are length-framed JSON (core/ipc/framed-json.ts); the executor validates them as it
// does Node IPC messages. A refused frame ends the connection and is said on the job's stderr.
import { chmod, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { UnavailableError } from '../../../core/errors.ts';
import { framedSocket, type FramedPeer } from '../../../core/ipc/framed-json.ts';
import type { HostProcess } from '../shared/child.ts';

export const RUNNER_SOCKET_NAME = 'runner-ipc.sock';
/** sun_path is 108 bytes on Linux, one of them the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

export interface RunnerSocket {
  readonly path: string;
  /** The runner process with `send`/`onMessage` over the socket; its stderr also carries transport errors. */
  attach(proc: HostProcess): HostProcess;
  /** Stop listening, drop the connection, remove the socket file. */
  close(): Promise<void>;
}

export async function listenRunnerSocket(dir: string, maxFrameBytes?: number): Promise<RunnerSocket> {
  const path = join(dir, RUNNER_SOCKET_NAME);
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new UnavailableError('SVC_ERR_SANDBOX_IPC', `the step runner's IPC channel cannot be set up: socket path ${path} is ${bytes} bytes, more than the ${MAX_SOCKET_PATH_BYTES} a unix socket allows (choose a shorter tmpRoot)`, { details: { path } });
  }
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new UnavailableError('SVC_ERR_SANDBOX_IPC', `the step runner's IPC channel cannot be set up: listening on ${path} failed: ${error.message}`, { cause: error })));
    server.listen(path, () => resolve());
  });
  // Only the agent's user (the container's user maps to it) may connect.
  await chmod(path, 0o600);

  const listeners: Array<(message: unknown) => void> = [];
  const early: unknown[] = [];
  const queued: unknown[] = [];
  const notes = new PassThrough();
  let peer: FramedPeer | undefined;
  let connection: Socket | undefined;
  let closed = false;

  const note = (text: string) => {
    if (!notes.writableEnded) notes.write(`svc agent: ${text}\n`);
  };
  const deliver = (message: unknown) => {
    if (listeners.length === 0) early.push(message);
    else for (const listener of listeners) listener(message);
  };
  const send = (message: unknown) => {
    if (closed) return;
    if (peer === undefined) {
      queued.push(message);
      return;
    }
    try {
      peer.send(message);
    } catch (error) {
      note(`a message to the step runner was not sent: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  server.on('connection', (socket) => {
    if (connection !== undefined || closed) {
      socket.destroy();
      return;
    }
    connection = socket;
    // The runner is in: nobody else gets to connect (closing the server removes the file).
    server.close();
    peer = framedSocket(
      socket,
      {
        message: deliver,
        error: (error) => note(`${error.message}; the IPC connection to the step runner is closed`),
        close: () => undefined,
      },
      maxFrameBytes,
    );
    for (const message of queued.splice(0)) send(message);
  });

  const close = async () => {
    if (closed) return;
    closed = true;
    connection?.destroy();
    await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    await rm(path, { force: true });
  };

  return {
    path,
    attach(proc) {
      proc.stderr.pipe(notes);
      void proc.exited.then(close);
      return {
        ...proc,
        stderr: notes,
        send,
        onMessage(listener) {
          listeners.push(listener);
          for (const message of early.splice(0)) listener(message);
        },
      };
    },
    close,
  };
}
