// The agent's opt-in Prometheus endpoint: `GET /metrics` on SVC_AGENT_METRICS_HOST (default
// 127.0.0.1) : SVC_AGENT_METRICS_PORT. One prom-client registry of its own (never the global one,
// so several agents in one process, as in tests and `svc dev`, keep apart), with prom-client's
// process metrics (event-loop delay, GC pauses, CPU, memory) and the agent's job metrics.
// Loaded only when the port is set.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentTelemetry } from './telemetry.ts';

export interface AgentMetricsServer {
  readonly telemetry: AgentTelemetry;
  /** `http://host:port/metrics` as bound (the real port when 0 was asked). */
  readonly url: string;
  /** The exposition text (what a scrape gets). */
  text(): Promise<string>;
  close(): Promise<void>;
}

/** Registers the agent's metrics on `registry` and returns the recorder the job code calls. */
export function agentTelemetry(registry: Registry): AgentTelemetry {
  const registers = [registry];
  const jobs = new Counter({ name: 'svc_agent_jobs_total', help: 'Jobs this agent finished, by terminal status.', labelNames: ['status'], registers });
  const warm = new Counter({ name: 'svc_agent_warm_runner_total', help: 'Warm-path jobs that found a loaded spare step runner (hit) or started one (miss).', labelNames: ['result'], registers });
  const checkout = new Histogram({
    name: 'svc_agent_checkout_seconds',
    help: "Checkout time by phase: the repository store's lock wait, fetch and tree write, or a checkout's own clone.",
    labelNames: ['phase'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const setup = new Histogram({
    name: 'svc_agent_job_setup_seconds',
    help: 'Job running to its first step running, on this agent.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const runnerWait = new Histogram({
    name: 'svc_agent_runner_wait_seconds',
    help: "Time a job's set-up waited for its step runner to finish loading (0 for a warm spare that had).",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers,
  });
  return {
    jobFinished: (status) => jobs.inc({ status }),
    warmRunner: (hit) => warm.inc({ result: hit ? 'hit' : 'miss' }),
    checkoutPhase: (phase, seconds) => checkout.observe({ phase }, seconds),
    firstStep: (setupSeconds, runnerWaitSeconds) => {
      setup.observe(setupSeconds);
      runnerWait.observe(runnerWaitSeconds);
    },
  };
}

export async function startAgentMetrics(options: { host: string; port: number; logger: Logger }): Promise<AgentMetricsServer> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const telemetry = agentTelemetry(registry);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the agent serves GET /metrics only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        options.logger.warn({ err: error }, 'agent metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n');
      },
    );
  });
  // A scraper that hangs must not hold sockets open for ever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}/metrics`;
  options.logger.info({ url }, 'agent metrics listening');
  return {
    telemetry,
    url,
    text: () => registry.metrics(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
