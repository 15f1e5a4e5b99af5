// How the step runner talks to the agent. By default Node's IPC channel (the agent forks the
// runner, or hands the descriptor into a podman container). When the agent names a unix socket
// in SVC_RUNNER_IPC_SOCKET (docker containers, or the container sandbox's `ipcTransport:
// 'socket'`), the runner connects to it and speaks length-framed JSON (core/ipc/framed-json.ts):
// the same messages, validated the same way by both sides. Loaded before anything heavy (main.ts
// must answer the agent fast): node:net and the framing only.
import { connect } from 'node:net';
import { framedSocket, RUNNER_IPC_SOCKET_ENV } from '../../core/ipc/framed-json.ts';

export interface RunnerTransport {
  /** Which channel: `node-ipc` or `socket:<path>` (for messages about it). */
  readonly name: string;
  send(message: unknown, done?: () => void): void;
  onMessage(listener: (message: unknown) => void): void;
  /** The agent is gone (channel closed, or a frame it sent was refused: `reason` says which). */
  onDisconnect(listener: (reason: string) => void): void;
}

function nodeIpc(): RunnerTransport {
  return {
    name: 'node-ipc',
    send: (message, done) => {
      process.send!(message, undefined, undefined, done === undefined ? undefined : () => done());
    },
    onMessage: (listener) => void process.on('message', listener),
    onDisconnect: (listener) => void process.on('disconnect', () => listener('the agent closed the IPC channel')),
  };
}

function socketTransport(path: string): RunnerTransport {
  const messages: Array<(message: unknown) => void> = [];
  const gone: Array<(reason: string) => void> = [];
  let refused: string | undefined;
  let connected = false;
  const socket = connect(path);
  socket.once('connect', () => (connected = true));
  socket.once('error', (error) => {
    if (!connected) refused = `cannot connect to the agent's IPC socket ${path}: ${error.message}`;
  });
  const peer = framedSocket(socket, {
    message: (message) => {
      for (const listener of messages) listener(message);
    },
    error: (error) => (refused = error.message),
    close: () => {
      const reason = refused ?? 'the agent closed the IPC socket';
      for (const listener of gone) listener(reason);
    },
  });
  return {
    name: `socket:${path}`,
    send: (message, done) => peer.send(message, done),
    onMessage: (listener) => void messages.push(listener),
    onDisconnect: (listener) => void gone.push(listener),
  };
}

/** The channel this runner was started with, or undefined when there is none (not run by an agent). */
export function openRunnerTransport(env: NodeJS.ProcessEnv = process.env): RunnerTransport | undefined {
  const path = env[RUNNER_IPC_SOCKET_ENV];
  if (path !== undefined && path !== '') return socketTransport(path);
  return typeof process.send === 'function' ? nodeIpc() : undefined;
}
