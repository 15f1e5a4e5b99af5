// One write per tick for a WebSocket client that sends bursts of small frames. ws writes every
// frame to its TCP socket at once, each a syscall that also wakes the peer to read it; a loop
// that sends dozens of messages (the relay link's status forwarder: two per run, a pass every
// 200 ms under webhook load) cost a writev per frame. Corking the socket on the first send of a
// tick and uncorking it when the tick ends (process.nextTick, before any I/O or timer) puts the
// tick's frames in one writev; a lone frame leaves as soon as before, the ordering is unchanged.
import type { Socket } from 'node:net';
import type WebSocket from 'ws';

export interface TickWrites {
  /** Sends `data` on the socket; the frames sent in this tick leave together when it ends. */
  send(data: string): void;
}

/** Call before the client connects: ws hands its TCP socket over with the upgrade response. */
export function tickWrites(ws: WebSocket): TickWrites {
  let tcp: Socket | undefined;
  let corked = false;
  ws.once('upgrade', (response) => {
    tcp = response.socket;
  });
  return {
    send(data) {
      if (tcp !== undefined && !corked) {
        const held = tcp;
        corked = true;
        held.cork();
        process.nextTick(() => {
          corked = false;
          held.uncork();
        });
      }
      ws.send(data);
    },
  };
}
