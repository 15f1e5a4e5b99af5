// Liveness of a WebSocket peer, checked once per heartbeat round. Any frame from the peer (a
// message, its own ping, a pong) shows it is alive, so a round that heard one sends nothing: a
// peer that pings on its own (the agent does, every 30 s) is pinged only in rounds it was quiet.
// With thousands of idle agents on one orchestrator this cuts the heartbeat frames the
// orchestrator writes and reads by about a third (issue 19: idle CPU with 5,000 agents; see
// docs/benchmarks.md). A quiet round sends a ping; a round after a ping that heard nothing ends
// the peer.

export type LivenessRound = 'heard' | 'ping' | 'dead';

export class PeerLiveness {
  #heard = false;
  #pinged = false;

  /** Call for every frame the peer sends (message, ping, pong). */
  heard(): void {
    this.#heard = true;
  }

  /** One heartbeat round: `ping` asks the caller to ping the peer, `dead` to end it. */
  round(): LivenessRound {
    if (this.#heard) {
      this.#heard = false;
      this.#pinged = false;
      return 'heard';
    }
    if (this.#pinged) return 'dead';
    this.#pinged = true;
    return 'ping';
  }
}

/**
 * The rounds of a `ws` socket, each run by a call of the returned function: listens for its pings
 * and pongs (the caller reports messages through `heard()`); a round pings when it was quiet and
 * calls `onDead` when a ping went unanswered for a whole round, and returns what it decided.
 * `watchPeer` runs them on a timer; a test runs them itself, one after the effect of the last.
 */
export function peerRounds(
  socket: { on(event: 'ping' | 'pong', listener: () => void): unknown; ping(): void },
  liveness: PeerLiveness,
  onDead: () => void,
): () => LivenessRound {
  socket.on('ping', () => liveness.heard());
  socket.on('pong', () => liveness.heard());
  return () => {
    const round = liveness.round();
    if (round === 'ping') socket.ping();
    else if (round === 'dead') onDead();
    return round;
  };
}

/** Runs `peerRounds` every `everyMs`. Returns the timer, for the caller to clear on close. */
export function watchPeer(
  socket: { on(event: 'ping' | 'pong', listener: () => void): unknown; ping(): void },
  liveness: PeerLiveness,
  everyMs: number,
  onDead: () => void,
): NodeJS.Timeout {
  const round = peerRounds(socket, liveness, onDead);
  return setInterval(round, everyMs);
}
