// The image's HEALTHCHECK (Containerfile). One image runs three servers, so the check first finds
// which one this container runs (its process's argv), then asks it:
// - svc-relay: GET /healthz on SVC_RELAY_PORT (default 7800);
// - svc-orchestrator: GET /healthz on SVC_METRICS_PORT when set (the endpoint moves there),
//   else SVC_SERVER_PORT (default 7700);
// - svc-agent: GET /metrics on SVC_AGENT_METRICS_PORT when set; it serves no other HTTP, so
//   without one the check is that the agent's process runs (it exits when it cannot go on).
// SVC_HEALTHCHECK_URL overrides the address (a port set in a config file, a base path, TLS).
// Exit 0 healthy, 1 not, with one line saying why. Plain JavaScript: it runs as shipped.
import { readdirSync, readFileSync } from 'node:fs';

const ROLES = ['svc-relay', 'svc-orchestrator', 'svc-agent'];
const TIMEOUT_MS = 4000;

/** The role and pid of the first svc server process found in /proc (this container's only). */
function findServer() {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended meanwhile
    }
    // `node /usr/local/bin/svc-relay` or `node /app/dist/bin/svc-relay.js`: the script is argv[1].
    const script = (argv[1] ?? '').split('/').pop()?.replace(/\.js$/, '');
    if (ROLES.includes(script)) return { role: script, pid };
  }
  return undefined;
}

/** The loopback address a server bound to `host` answers on. */
function localHost(host) {
  if (host === undefined || host === '' || host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

function urlFor(role, env) {
  if (env.SVC_HEALTHCHECK_URL) return env.SVC_HEALTHCHECK_URL;
  if (role === 'svc-relay') return `http://${localHost(env.SVC_RELAY_HOST)}:${env.SVC_RELAY_PORT || 7800}/healthz`;
  if (role === 'svc-orchestrator') {
    if (env.SVC_METRICS_PORT) return `http://${localHost(env.SVC_SERVER_HOST)}:${env.SVC_METRICS_PORT}/healthz`;
    return `http://${localHost(env.SVC_SERVER_HOST)}:${env.SVC_SERVER_PORT || 7700}/healthz`;
  }
  if (env.SVC_AGENT_METRICS_PORT) return `http://${localHost(env.SVC_AGENT_METRICS_HOST)}:${env.SVC_AGENT_METRICS_PORT}/metrics`;
  return undefined;
}

function fail(line) {
  process.stderr.write(`healthcheck: ${line}\n`);
  process.exit(1);
}

const server = findServer();
if (server === undefined) fail(`no ${ROLES.join(', ')} process is running`);
const state = readFileSync(`/proc/${server.pid}/stat`, 'utf8').replace(/^.*\) /, '')[0];
if (state === 'Z') fail(`${server.role} (pid ${server.pid}) has exited`);
const url = urlFor(server.role, process.env);
if (url === undefined) {
  process.stdout.write(`healthcheck: ${server.role} (pid ${server.pid}) is running\n`);
  process.exit(0);
}
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!response.ok) fail(`${server.role}: GET ${url} answered ${response.status}`);
  process.stdout.write(`healthcheck: ${server.role}: GET ${url} answered ${response.status}\n`);
} catch (error) {
  fail(`${server.role}: GET ${url} failed: ${error instanceof Error ? (error.cause?.message ?? error.message) : String(error)}`);
}
