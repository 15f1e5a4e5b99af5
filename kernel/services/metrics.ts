// The kernel's one prom-client registry per process. Nothing here touches prom-client's global
// default registry, so several servers in one process (tests, `svc dev`) never collide.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration, type Metric } from 'prom-client';

export interface CreateMetricsOptions {
  /** Register prom-client's process metrics (CPU, memory, event loop, handles). Default true. */
  defaultMetrics?: boolean;
  /** Labels added to every series, e.g. `{ instance: 'orch-1' }`. */
  defaultLabels?: Record<string, string>;
}

export type ConfigReloadResult = 'attempted' | 'success' | 'failed';
export type ConfigReloadSource = 'sighup' | 'http' | 'cluster' | 'cli';

export interface SvcMetrics {
  readonly registry: Registry;
  /** `Content-Type` of the text exposition. */
  readonly contentType: string;
  /** Text exposition of every metric on the registry. */
  text(): Promise<string>;
  /**
   * Get-or-create by name, so a plugin restarted in the same process gets its metric back.
   * Asking for an existing name with another type is a programming error and throws.
   */
  counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L>;
  gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L>;
  histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L>;
  /** spec: svc_orch_config_reload_total{result, source} */
  readonly configReloads: Counter<'result' | 'source'>;
  /** spec: svc_orch_config_version */
  readonly configVersion: Gauge;
}

export function createMetrics(options: CreateMetricsOptions = {}): SvcMetrics {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  function getOrCreate<M extends Metric>(name: string, kind: new (config: never) => M, create: () => M): M {
    const existing = registry.getSingleMetric(name);
    if (existing === undefined) return create();
    if (!(existing instanceof kind)) {
      throw new Error(`metric ${name} is already registered as a different type`);
    }
    return existing;
  }

  const metrics: SvcMetrics = {
    registry,
    contentType: registry.contentType,
    text: () => registry.metrics(),
    counter: (config) => getOrCreate(config.name, Counter, () => new Counter({ ...config, registers: [registry] })),
    gauge: (config) => getOrCreate(config.name, Gauge, () => new Gauge({ ...config, registers: [registry] })),
    histogram: (config) => getOrCreate(config.name, Histogram, () => new Histogram({ ...config, registers: [registry] })),
    configReloads: undefined as never,
    configVersion: undefined as never,
  };
  return {
    ...metrics,
    configReloads: metrics.counter({
      name: 'svc_orch_config_reload_total',
      help: 'Config reloads by result (attempted, success, failed) and trigger source (sighup, http, cluster, cli).',
      labelNames: ['result', 'source'],
    }),
    configVersion: metrics.gauge({ name: 'svc_orch_config_version', help: 'Shared config version in effect.' }),
  };
}
