// Length-framed JSON over a byte stream: the step runner's channel where Node's own IPC
// descriptor cannot reach it (docker has no `--preserve-fds`). Each frame is a 4-byte
// big-endian payload length followed by that many bytes of UTF-8 JSON. The transport only
// frames: the messages inside are validated by the same schemas as on Node's IPC channel.
// A bad frame cannot be skipped (the next length would be read from the middle of it), so a
// decoder error ends the connection; the caller says why in the job log.
import type { Socket } from 'node:net';
import { InputError } from '../errors.ts';

/** The runner's environment variable naming the agent's socket (agent/runner/transport.ts). */
export const RUNNER_IPC_SOCKET_ENV = 'SVC_RUNNER_IPC_SOCKET';

const HEADER_BYTES = 4;
/** Largest payload either side sends or accepts; a runner.start carries the event payload and secrets. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

function frameError(reason: string): InputError {
  return new InputError('SVC_ERR_RUNNER_IPC_FRAME', `runner IPC frame refused: ${reason}`, { details: { reason } });
}

/** One frame for `message`; refuses values JSON cannot carry and payloads over the limit. */
export function encodeFrame(message: unknown, maxBytes: number = MAX_FRAME_BYTES): Buffer {
  const text = JSON.stringify(message);
  if (text === undefined) throw frameError(`a ${typeof message} is not a JSON value`);
  const payload = Buffer.from(text, 'utf8');
  if (payload.length > maxBytes) throw frameError(`the message is ${payload.length} bytes, more than the ${maxBytes} byte limit`);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(payload.length, 0);
  return Buffer.concat([header, payload]);
}

/**
 * Turns arriving chunks into messages, handed to `deliver` in order as each frame completes; throws
 * (InputError SVC_ERR_RUNNER_IPC_FRAME) at the first bad frame, after the good ones before it.
 */
export class FrameDecoder {
  readonly #maxBytes: number;
  readonly #utf8 = new TextDecoder('utf-8', { fatal: true });
  #chunks: Buffer[] = [];
  #buffered = 0;
  #failed = false;

  constructor(maxBytes: number = MAX_FRAME_BYTES) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Buffer, deliver: (message: unknown) => void): void {
    if (this.#failed) throw frameError('the stream already failed');
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    while (this.#buffered >= HEADER_BYTES) {
      const buffer = this.#take();
      const length = buffer.readUInt32BE(0);
      if (length === 0) this.#fail('an empty frame (length 0) is not a JSON message');
      if (length > this.#maxBytes) this.#fail(`the frame announces ${length} bytes, more than the ${this.#maxBytes} byte limit`);
      if (buffer.length < HEADER_BYTES + length) break;
      const payload = buffer.subarray(HEADER_BYTES, HEADER_BYTES + length);
      this.#keep(buffer.subarray(HEADER_BYTES + length));
      let text: string;
      try {
        text = this.#utf8.decode(payload);
      } catch {
        this.#fail(`the ${length} byte payload is not valid UTF-8`);
      }
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch (error) {
        this.#fail(`the ${length} byte payload is not JSON (${error instanceof Error ? error.message : String(error)})`);
      }
      deliver(message);
    }
  }

  /** The stream ended: an error when it stopped inside a frame. */
  end(): void {
    if (this.#failed || this.#buffered === 0) return;
    const buffer = this.#take();
    const what = buffer.length < HEADER_BYTES ? `${buffer.length} of the ${HEADER_BYTES} header bytes` : `${buffer.length - HEADER_BYTES} of ${buffer.readUInt32BE(0)} payload bytes`;
    this.#fail(`the connection closed inside a frame (${what} arrived)`);
  }

  #take(): Buffer {
    const buffer = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    this.#chunks = [buffer];
    return buffer;
  }

  #keep(rest: Buffer): void {
    this.#chunks = rest.length === 0 ? [] : [rest];
    this.#buffered = rest.length;
  }

  #fail(reason: string): never {
    this.#failed = true;
    this.#chunks = [];
    this.#buffered = 0;
    throw frameError(reason);
  }
}

export interface FramedPeer {
  /** Queue one message; `done` runs once it is written (or dropped because the peer is gone). */
  send(message: unknown, done?: () => void): void;
  /** Close the connection (pending writes are flushed first). */
  close(): void;
}

export interface FramedHandlers {
  message(message: unknown): void;
  /** A frame the peer sent was refused; the connection is closed right after. */
  error(error: InputError): void;
  /** The connection is gone (after `error`, or when the peer closed or vanished). */
  close(): void;
}

/** Speak framed JSON on `socket`. Writes before the socket connects are queued by the socket itself. */
export function framedSocket(socket: Socket, handlers: FramedHandlers, maxBytes: number = MAX_FRAME_BYTES): FramedPeer {
  const decoder = new FrameDecoder(maxBytes);
  let closed = false;
  const refuse = (error: unknown) => {
    if (closed) return;
    handlers.error(error instanceof InputError ? error : frameError(String(error)));
    socket.destroy();
  };
  socket.on('data', (chunk: Buffer) => {
    try {
      decoder.push(chunk, (message) => {
        if (!closed) handlers.message(message);
      });
    } catch (error) {
      refuse(error);
    }
  });
  socket.on('end', () => {
    try {
      decoder.end();
    } catch (error) {
      refuse(error);
    }
  });
  // A reset or refused connection ends it like a close; the close handler reports it.
  socket.on('error', () => undefined);
  socket.on('close', () => {
    if (closed) return;
    closed = true;
    handlers.close();
  });
  return {
    send(message, done) {
      const frame = encodeFrame(message, maxBytes);
      if (closed || socket.destroyed) {
        done?.();
        return;
      }
      socket.write(frame, () => done?.());
    },
    close() {
      socket.end();
    },
  };
}
