// Peer liveness (kernel/services/ws-liveness.ts): the rounds' decisions, then on real sockets a
// quiet peer is pinged, a peer that pings on its own is left alone, and one that answers nothing
// is ended after one unanswered round.
import { once } from 'node:events';
import t from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { PeerLiveness, watchPeer, type LivenessRound } from '../../../kernel/services/ws-liveness.ts';

t.test('rounds: a round that heard the peer sends nothing; a quiet one pings; a quiet one after a ping ends it', async (t) => {
  const live = new PeerLiveness();
  const rounds: LivenessRound[] = [];
  rounds.push(live.round()); // nothing heard yet since the connection
  live.heard(); // its pong
  rounds.push(live.round());
  rounds.push(live.round()); // quiet again
  live.heard(); // its own ping, or a message
  live.heard();
  rounds.push(live.round());
  rounds.push(live.round());
  rounds.push(live.round()); // the ping before went unanswered
  t.same(rounds, ['ping', 'heard', 'ping', 'heard', 'ping', 'dead']);
  t.equal(live.round(), 'dead', 'stays dead until heard');
  live.heard();
  t.equal(live.round(), 'heard', 'a late frame revives it (the caller has ended the socket by then)');
});

t.test('real sockets', async (t) => {
  const ROUND_MS = 400;
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const ended = new Set<string>();
  const timers: NodeJS.Timeout[] = [];
  t.teardown(() => timers.forEach((timer) => clearInterval(timer)));
  server.on('connection', (peer, request) => {
    const name = new URL(request.url ?? '/', 'http://x').searchParams.get('name') ?? '?';
    const live = new PeerLiveness();
    peer.on('message', () => live.heard());
    timers.push(watchPeer(peer, live, ROUND_MS, () => {
      ended.add(name);
      peer.terminate();
    }));
  });
  const port = (server.address() as { port: number }).port;
  const open = async (name: string, autoPong = true): Promise<{ ws: WebSocket; pings: () => number }> => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?name=${name}`, { autoPong });
    let pings = 0;
    ws.on('ping', () => (pings += 1));
    ws.on('error', () => undefined);
    await once(ws, 'open');
    t.teardown(() => ws.terminate());
    return { ws, pings: () => pings };
  };

  const quiet = await open('quiet');
  const pinger = await open('pinger');
  // Far more often than the rounds: every round hears it.
  const own = setInterval(() => pinger.ws.ping(), ROUND_MS / 8);
  t.teardown(() => clearInterval(own));
  const silent = await open('silent', false);

  const deadline = Date.now() + 60_000;
  while ((quiet.pings() < 3 || !ended.has('silent')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.ok(quiet.pings() >= 3, `a quiet peer that answers is pinged in its quiet rounds (${quiet.pings()} pings)`);
  t.ok(pinger.pings() < quiet.pings(), `a peer that pings on its own is pinged less (${pinger.pings()} against ${quiet.pings()}): only when a round missed its pings`);
  t.ok(ended.has('silent'), 'a peer that answers no ping is ended');
  t.notOk(ended.has('quiet') || ended.has('pinger'), 'peers that answer stay');
  while (silent.ws.readyState !== WebSocket.CLOSED && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.equal(silent.ws.readyState, WebSocket.CLOSED, 'its socket is closed');
});
