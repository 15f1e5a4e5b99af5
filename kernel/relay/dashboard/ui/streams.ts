// Live updates as Server-Sent Events (one-way, reconnecting by themselves in the browser, plain
// HTTP through any proxy):
//   GET /ui/orgs/:orgId/runs/events?status=&repository= → `runs` events: the rendered rows of the
//       list whenever the relay's run index changes for that filter (checked every second)
//   GET /ui/orgs/:orgId/runs/:runId/logs/stream         → `lines` events (batches of log lines,
//       already masked as stored), `status` events, then `end` once the run is over and read out
// The credential is checked once at the start, like any GET; a stream ends when the relay stops.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { runRow } from './pages.ts';
import { filterOf, runIdOf, runsFor, uiCaller, unwrapAnswer, type UiOptions } from './common.ts';
import { mapError } from '../../../services/http/index.ts';

const RUNS_POLL_MS = 1_000;
const LOGS_IDLE_MS = 700;
/** Lines per event: large pages become several events, so the browser parses in small bites. */
const LINES_PER_EVENT = 2_000;

interface Sse {
  send(event: string, data: unknown): boolean;
  readonly closed: boolean;
  close(): void;
}

function openSse(reply: FastifyReply, signal: AbortSignal): Sse {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  });
  raw.write('retry: 2000\n\n');
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    signal.removeEventListener('abort', close);
    raw.end();
  };
  raw.on('close', () => {
    closed = true;
    signal.removeEventListener('abort', close);
  });
  signal.addEventListener('abort', close);
  return {
    send(event, data) {
      if (closed) return false;
      return raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    get closed() {
      return closed;
    },
    close,
  };
}

/** Resolves after `ms` or as soon as the stream closes. */
function pause(sse: Sse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const check = setInterval(() => {
      if (sse.closed) {
        clearTimeout(timer);
        clearInterval(check);
        resolve();
      }
    }, 100);
    setTimeout(() => clearInterval(check), ms + 10);
  });
}

function refuse(reply: FastifyReply, request: FastifyRequest, error: unknown): FastifyReply {
  const mapped = mapError(error, { requestId: request.id });
  for (const [name, value] of Object.entries(mapped.headers)) void reply.header(name, value);
  return reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
}

export function registerStreams(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger, signal } = options;

  app.get('/ui/orgs/:orgId/runs/events', async (request, reply) => {
    let orgId: string;
    let filter: { status?: string; repository?: string };
    try {
      ({ orgId } = await uiCaller(db, request));
      filter = filterOf(request);
    } catch (error) {
      return refuse(reply, request, error);
    }
    const sse = openSse(reply, signal);
    let last = '';
    while (!sse.closed) {
      try {
        const runs = await runsFor(db, orgId, filter);
        const rows = runs.map((r) => runRow(orgId, r).html).join('');
        const digest = createHash('sha256').update(rows).digest('base64url');
        if (digest !== last) {
          last = digest;
          sse.send('runs', { html: rows, count: runs.length });
        }
      } catch (error) {
        logger.warn({ err: error }, 'runs stream could not read the run index');
      }
      await pause(sse, RUNS_POLL_MS);
    }
  });

  app.get('/ui/orgs/:orgId/runs/:runId/logs/stream', async (request, reply) => {
    let orgId: string;
    let runId: string;
    try {
      ({ orgId } = await uiCaller(db, request));
      runId = runIdOf(request);
    } catch (error) {
      return refuse(reply, request, error);
    }
    const sse = openSse(reply, signal);
    let cursor: string | undefined;
    let status = '';
    while (!sse.closed) {
      try {
        const page = unwrapAnswer(await broker.request(orgId, { type: 'run.logs.request', orgId, runId, ...(cursor !== undefined ? { after: cursor } : {}) })).page;
        if (page === undefined) throw new Error('the orchestrator answered without a page');
        cursor = page.cursor;
        for (let i = 0; i < page.lines.length; i += LINES_PER_EVENT) {
          // Only what the page shows: the job, step, stream and text of each line.
          sse.send('lines', page.lines.slice(i, i + LINES_PER_EVENT).map((l) => [l.job, l.step, l.stream, l.text]));
        }
        if (page.status !== status) {
          status = page.status;
          sse.send('status', { status, terminal: page.terminal });
        }
        if (page.terminal && !page.more) {
          sse.send('end', { status });
          sse.close();
          break;
        }
        if (!page.more) await pause(sse, LOGS_IDLE_MS);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        sse.send('problem', { message });
        await pause(sse, 2_000);
      }
    }
  });
}
