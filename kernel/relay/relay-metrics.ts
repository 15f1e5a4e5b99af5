// The relay's metrics, on the process's one registry.
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { SvcMetrics } from '../services/metrics.ts';

/** Outcomes of `svc_relay_webhooks_total`: the ack results plus the relay's own answers. */
export type WebhookOutcome =
  | 'accepted'
  | 'duplicate'
  | 'rejected_signature'
  | 'rejected_unknown_source'
  | 'rejected_misconfigured'
  | 'shed_retry_later'
  | 'buffered'
  | 'buffer_full'
  | 'rate_limited'
  | 'too_large'
  | 'unknown_org'
  | 'unknown_source'
  | 'relay_duplicate';

export interface RelayMetrics {
  webhooks: Counter<'outcome'>;
  buffered: Gauge;
  shed: Counter<'reason'>;
  bufferExpired: Counter;
  orchestrators: Gauge;
  framesRefused: Counter<'reason'>;
  ackSeconds: Histogram<'result'>;
  replayed: Counter<'result'>;
}

export function relayMetrics(metrics: SvcMetrics): RelayMetrics {
  return {
    webhooks: metrics.counter({ name: 'svc_relay_webhooks_total', help: 'Inbound webhooks by how the relay answered them.', labelNames: ['outcome'] }),
    buffered: metrics.gauge({ name: 'svc_relay_buffered', help: 'Deliveries held in the durable buffer.' }),
    shed: metrics.counter({
      name: 'svc_relay_shed_total',
      help: 'Webhooks refused with 429/503: ingress rate limits, orchestrator admission (shed_retry_later), buffer budget.',
      labelNames: ['reason'],
    }),
    bufferExpired: metrics.counter({ name: 'svc_relay_buffer_expired_total', help: 'Buffered deliveries dropped because no orchestrator took them within the buffer TTL.' }),
    orchestrators: metrics.gauge({ name: 'svc_relay_orchestrators_connected', help: 'Orchestrator sockets past hello.' }),
    framesRefused: metrics.counter({ name: 'svc_relay_frames_refused_total', help: 'Orchestrator frames refused (bad JSON, schema, order).', labelNames: ['reason'] }),
    ackSeconds: metrics.histogram({
      name: 'svc_relay_ack_seconds',
      help: 'Time from sending webhook.deliver to its ack, per candidate.',
      labelNames: ['result'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
    replayed: metrics.counter({ name: 'svc_relay_replayed_total', help: 'Buffered deliveries replayed, by ack result.', labelNames: ['result'] }),
  };
}
