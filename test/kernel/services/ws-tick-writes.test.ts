// One write per tick (kernel/services/ws-tick-writes.ts) on real sockets: the frames a loop sends
// stay in the corked TCP socket until the tick ends and then leave together, arrive complete and
// in order; a frame sent in a later tick is not held back by the earlier one.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import t from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { tickWrites } from '../../../kernel/services/ws-tick-writes.ts';

const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await once(server, 'listening');
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const received: string[] = [];
server.on('connection', (peer) => peer.on('message', (data) => received.push(String(data))));
const port = (server.address() as { port: number }).port;

const client = new WebSocket(`ws://127.0.0.1:${port}`);
let tcp: Socket | undefined;
client.once('upgrade', (response) => {
  tcp = response.socket;
});
const writes = tickWrites(client);
await once(client, 'open');
t.teardown(() => client.close());
t.ok(tcp, 'the TCP socket came with the upgrade');

const until = async (what: string, check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

t.test('a burst of frames sent in one tick is held in the socket until the tick ends', async (t) => {
  const messages = Array.from({ length: 50 }, (_, i) => JSON.stringify({ type: 'job.status.forward', i, text: 'x'.repeat(i) }));
  for (const message of messages) writes.send(message);
  t.equal(tcp!.writableCorked, 1, 'the socket is corked once for the whole burst');
  t.ok(tcp!.writableLength > messages.join('').length, 'every frame of the burst is still in the socket (none written yet)');
  await new Promise((resolve) => process.nextTick(resolve));
  t.equal(tcp!.writableCorked, 0, 'uncorked when the tick ends');
  await until('the burst', () => received.length === messages.length);
  t.same(received, messages, 'each frame arrived whole and in order');
});

t.test('frames of later ticks leave in their own tick', async (t) => {
  received.length = 0;
  writes.send('one');
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(tcp!.writableCorked, 0);
  await until('the first frame', () => received.length === 1);
  writes.send('two');
  writes.send('three');
  await until('the next two', () => received.length === 3);
  t.same(received, ['one', 'two', 'three']);
});
