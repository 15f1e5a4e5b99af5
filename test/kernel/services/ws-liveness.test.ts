// Peer liveness (kernel/services/ws-liveness.ts): the rounds' decisions, then on real sockets
// (rounds run by the test) a quiet peer is pinged, a peer that pings on its own is left alone,
// and one that answers nothing is ended after one unanswered round; watchPeer runs them on a timer.
import { once } from 'node:events';
import t from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { PeerLiveness, peerRounds, watchPeer, type LivenessRound } from '../../../kernel/services/ws-liveness.ts';

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
  // The rounds are run by the test, each once the effect of the one before arrived (a pong, the
  // peer's own ping): what is decided does not depend on how fast a busy machine runs timers.
  class Counted extends PeerLiveness {
    heardCount = 0;
    override heard(): void {
      this.heardCount += 1;
      super.heard();
    }
  }
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const ended = new Set<string>();
  const peers = new Map<string, { live: Counted; round: () => LivenessRound }>();
  server.on('connection', (peer, request) => {
    const name = new URL(request.url ?? '/', 'http://x').searchParams.get('name') ?? '?';
    const live = new Counted();
    peer.on('message', () => live.heard());
    const round = peerRounds(peer, live, () => {
      ended.add(name);
      peer.terminate();
    });
    peers.set(name, { live, round });
  });
  const port = (server.address() as { port: number }).port;
  const until = async (what: string, check: () => boolean): Promise<void> => {
    for (const deadline = Date.now() + 60_000; !check(); await new Promise((r) => setTimeout(r, 5))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    }
  };
  const open = async (name: string, autoPong = true) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?name=${name}`, { autoPong });
    let pings = 0;
    ws.on('ping', () => (pings += 1));
    ws.on('error', () => undefined);
    await once(ws, 'open');
    t.teardown(() => ws.terminate());
    await until(`the server side of ${name}`, () => peers.has(name));
    return { ws, pings: () => pings, ...peers.get(name)! };
  };

  const quiet = await open('quiet');
  for (let i = 0; i < 3; i += 1) {
    const before = quiet.live.heardCount;
    t.equal(quiet.round(), 'ping', 'a quiet round pings');
    await until('its pong', () => quiet.live.heardCount > before);
    t.equal(quiet.round(), 'heard', 'the pong was heard: the next round sends nothing');
  }
  t.equal(quiet.pings(), 3, 'a quiet peer that answers is pinged in its quiet rounds only');

  const pinger = await open('pinger');
  for (let i = 0; i < 3; i += 1) {
    const before = pinger.live.heardCount;
    pinger.ws.ping();
    await until('its own ping', () => pinger.live.heardCount > before);
    t.equal(pinger.round(), 'heard', 'a round that heard its ping sends nothing');
  }
  t.equal(pinger.pings(), 0, 'a peer that pings on its own is not pinged');

  const silent = await open('silent', false);
  t.equal(silent.round(), 'ping');
  await until('the ping reached it', () => silent.pings() === 1);
  t.equal(silent.round(), 'dead', 'a ping unanswered for a round');
  t.ok(ended.has('silent'), 'a peer that answers no ping is ended');
  t.notOk(ended.has('quiet') || ended.has('pinger'), 'peers that answer stay');
  await until('its socket closed', () => silent.ws.readyState === WebSocket.CLOSED);
  t.equal(silent.ws.readyState, WebSocket.CLOSED, 'its socket is closed');
});

t.test('watchPeer runs the rounds on a timer', async (t) => {
  const socket = { pings: 0, on: () => undefined, ping() { this.pings += 1; } };
  let dead = 0;
  const timer = watchPeer(socket, new PeerLiveness(), 1, () => (dead += 1));
  t.teardown(() => clearInterval(timer));
  // A quiet peer: a ping, then (nothing heard) dead, by rounds, however late the timer fires.
  for (const deadline = Date.now() + 60_000; dead === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
  clearInterval(timer);
  t.equal(socket.pings, 1, 'one ping');
  t.ok(dead >= 1, 'then ended');
});
