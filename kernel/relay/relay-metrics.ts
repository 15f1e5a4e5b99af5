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

/** Fine buckets for the ingest hops, whose budget is 25 ms at p99 end to end. */
export const STAGE_BUCKETS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface RelayMetrics {
  webhooks: Counter<'outcome'>;
  buffered: Gauge;
  shed: Counter<'reason'>;
  bufferExpired: Counter;
  orchestrators: Gauge;
  framesRefused: Counter<'reason'>;
  ackSeconds: Histogram<'result'>;
  forwardSeconds: Histogram;
  replayed: Counter<'result'>;
  replayPasses: Counter;
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
      buckets: STAGE_BUCKETS,
    }),
    // The relay's own share of a delivery's latency, so a slow ingest names its hop (the bench
    // prints it next to the ack time and the orchestrator's stages).
    forwardSeconds: metrics.histogram({
      name: 'svc_relay_forward_seconds',
      help: 'Time from a webhook arriving at the relay to its webhook.deliver frame being sent to the first candidate.',
      buckets: STAGE_BUCKETS,
    }),
    replayed: metrics.counter({ name: 'svc_relay_replayed_total', help: 'Buffered deliveries replayed, by ack result.', labelNames: ['result'] }),
    // Tests read "nothing more was replayed" (paused after a shed, an expired delivery) after
    // counted passes instead of after a sleep.
    replayPasses: metrics.counter({ name: 'svc_relay_replay_passes_total', help: "Replay passes over an org's buffered deliveries completed (including a pass that found it paused or empty)." }),
  };
}
