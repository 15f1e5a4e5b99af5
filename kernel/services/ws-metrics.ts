// WebSocket connection metrics, one helper for every endpoint: the orchestrator's agent endpoint,
// its relay link (client side) and the relay's orchestrator endpoint. A socket is counted when it
// is open (at once for accepted sockets, at 'open' for dialled ones), so a dial that never
// connects moves nothing. Messages are counted per direction only: a frame's `type` comes from
// the peer before validation (unbounded label values) and reading it would parse every frame twice.
import type { WebSocket } from 'ws';
import type { SvcMetrics } from './metrics.ts';

export type WsEndpoint = 'agent' | 'relay_link' | 'relay_orchestrator';

export function wsMetrics(metrics: SvcMetrics) {
  return {
    open: metrics.gauge({ name: 'svc_ws_connections_open', help: 'WebSocket connections open now, by endpoint.', labelNames: ['endpoint'] }),
    connects: metrics.counter({ name: 'svc_ws_connects_total', help: 'WebSocket connections opened, by endpoint.', labelNames: ['endpoint'] }),
    disconnects: metrics.counter({ name: 'svc_ws_disconnects_total', help: 'WebSocket connections closed, by endpoint.', labelNames: ['endpoint'] }),
    messages: metrics.counter({ name: 'svc_ws_messages_total', help: 'WebSocket messages, by endpoint and direction (in, out).', labelNames: ['endpoint', 'direction'] }),
  };
}

/** Counts this socket's connect, disconnect and messages under `endpoint`. Call once per socket. */
export function trackSocket(metrics: SvcMetrics, endpoint: WsEndpoint, socket: WebSocket): void {
  const m = wsMetrics(metrics);
  let counted = false;
  const opened = () => {
    if (counted) return;
    counted = true;
    m.connects.inc({ endpoint });
    m.open.inc({ endpoint });
  };
  if (socket.readyState === socket.OPEN) opened();
  else socket.once('open', opened);
  socket.once('close', () => {
    if (!counted) return;
    m.disconnects.inc({ endpoint });
    m.open.dec({ endpoint });
  });
  socket.on('message', () => m.messages.inc({ endpoint, direction: 'in' }));
  // ws has no 'sent' event; the instance's own send is wrapped (the socket is ours alone).
  const send = socket.send.bind(socket) as (...args: unknown[]) => void;
  socket.send = ((...args: unknown[]) => {
    m.messages.inc({ endpoint, direction: 'out' });
    send(...args);
  }) as WebSocket['send'];
}
