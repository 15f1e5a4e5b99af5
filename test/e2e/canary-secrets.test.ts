// Canary secrets never leak (issue 18, item 3), with REAL processes (test/fixtures/jobs-stack.ts):
// svc-relay, svc-orchestrator and svc-agent (process sandbox, debug logs) on real PostgreSQL.
// 24 random canary values in many shapes (multi-line PEM, JSON-special, shell metacharacters,
// 4 KiB, unicode, base64-looking, URL with credentials, …) are stored three ways
// (`svc-admin secret set --value-file`, `--value`, and `svc secrets set` through the Platform into
// a test context), released to a job, and leaked by the workflow through every channel a careless
// user has: console.log/error, ctx.log, writes split in two (within and across the pipeline's
// hold time), JSON.stringify, base64 and URL encodings, `ctx.$` command lines and their output,
// an `env` dump, step and job outputs, ctx.setSecretOutput, ctx.emit payloads, a thrown error's
// message and stack, a failing step's lines, a workspace file.
// Then every place the system writes is scanned for the value's forms that must never be kept:
// the value itself, each line of a multi-line value, and its JSON-escaped form (what a JSON log
// line or a jsonb column holds):
//   - the programs' logs (relay, orchestrator, agent: their whole captured output), what the
//     CLI prints (`svc runs show|logs --json`, every svc-admin call), and what the dashboard sends
//     a browser (the run page with the job outputs, the log stream);
//   - every table of the orchestrator's and the relay's databases (each row as to_jsonb, strings
//     that hold JSON parsed again, bytea decoded and decompressed);
//   - every file under the stack's data directories (storage objects included; gzip and zstd
//     decompressed, tar members read one by one);
//   - the agent's work directory while the job runs (in-flight records, workspace outside the
//     file the step wrote on purpose) and after it ended (everything).
// The transformed forms (base64, URL encoding) are masked by the agent too; they are counted in the
// comment table but not asserted (a scan for them would also match data that merely contains
// them). A file the user uploads as an artifact is user data and is not masked by any CI; this
// workflow uploads a report without secrets.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile, lstat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import pg from 'pg';
import * as tar from 'tar';
import t from 'tap';
import { eachDatabase } from '../fixtures/db.ts';
import { ORG, startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { until } from '../fixtures/runs.ts';
import { sql } from '../../kernel/services/db/index.ts';

t.setTimeout(1_200_000);

const hex = (n: number) => randomBytes(n).toString('hex');

/** Shape name → a fresh random value (each run of the file makes new ones). */
function canaries(): Array<{ shape: string; key: string; value: string }> {
  const r = () => hex(8);
  const long = `canary-long-${r()}-`;
  const shapes: Array<[string, string]> = [
    ['plain', `canary-plain-${r()}`],
    ['pem multi-line', `-----BEGIN CANARY ${r()} KEY-----\nMIIcanary${r()}${r()}\nQ2FuYXJ5${r()}${r()}\n-----END CANARY ${r()} KEY-----`],
    ['crlf multi-line', `canary-crlf-${r()}\r\nsecond-${r()}\r\nthird-${r()}`],
    ['json-special', `canary-json-${r()}"quoted"\\back\\slash/{}[]`],
    ['shell meta', `canary-shell-${r()}$HOME\`id\`;ls|cat&&x>y<z`],
    ['single quote', `canary-squote-${r()}'it''s'`],
    ['spaces', `canary spaces ${r()}  two  spaces`],
    ['tabs', `canary-tab-${r()}\tafter\ttab`],
    ['4 KiB', (long + hex(2048)).slice(0, 4096)],
    ['unicode', `canary-unicode-${r()}-ünïcødé-密钥-🔑`],
    ['base64-like', randomBytes(45).toString('base64').replace(/^./, 'Y')],
    ['url with credentials', `https://canary-user-${r()}:p%40ss-${r()}@example.invalid/path?token=${r()}`],
    ['percent literal', `canary-pct-${r()}%41%20%zz`],
    ['regex special', `canary-regex-${r()}.*+?^\${}()|[]`],
    ['xml', `<canary-xml-${r()} a="b">&amp;</canary>`],
    ['env-like', `CANARY_KV_${r()}=value=with=equals`],
    ['leading dashes', `--canary-dash-${r()}`],
    ['hex digest', hex(32)],
    ['jwt-like', `eyJ${r()}.eyJ${r()}${r()}.${randomBytes(24).toString('base64url')}`],
    ['ansi escapes', `canary-ansi-${r()}\u001b[31mred\u001b[0m`],
    ['percent-s format', `canary-fmt-${r()}%s%d%j%%`],
    ['set with --value', `canary-flag-${r()}`],
  ];
  return shapes.map(([shape, value], i) => ({ shape, key: `S${String(i + 1).padStart(2, '0')}`, value }));
}

/** The forms of a value no place may hold: itself, each line (multi-line), JSON-escaped. */
function needlesOf(value: string): string[] {
  const forms = new Set<string>([value]);
  if (/\r?\n/.test(value)) for (const line of value.split(/\r?\n/)) if (line.trim().length >= 8) forms.add(line.trim());
  for (const form of [...forms]) forms.add(JSON.stringify(form).slice(1, -1));
  return [...forms];
}

/** Masked by the agent too, counted for information only. */
function transformedOf(value: string): string[] {
  const b = Buffer.from(value, 'utf8');
  return [...new Set([b.toString('base64'), b.toString('base64url'), encodeURIComponent(value)])].filter((f) => f !== value);
}

const KEYS_MAX = 30;

const workflow = (gateDir: string) => `import { job, push, workflow } from 'svc/sdk';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const KEYS = Array.from({ length: ${KEYS_MAX} }, (_, i) => 'S' + String(i + 1).padStart(2, '0')).concat(['TESTCTX']);
const values = (ctx) => KEYS.map((k) => ctx.secrets.get(k)).filter((v) => typeof v === 'string');
export default workflow('canary', {
  on: push({ branches: ['main'] }),
  jobs: {
    leak: job({
      runsOn: 'e2e',
      contexts: ['canary', 'canarytest'],
      steps: (s) => s
        .step('print', async (ctx) => {
          console.log('released ' + values(ctx).length);
          for (const v of values(ctx)) {
            console.log('plain ' + v);
            console.error('stderr ' + v);
            ctx.log.info('ctx.log ' + v);
            ctx.log.warn(v);
            console.log(JSON.stringify({ token: v, nested: { again: v } }));
            console.log('%s formatted', v);
            console.log('b64 ' + Buffer.from(v).toString('base64') + ' url ' + encodeURIComponent(v));
          }
        })
        .step('split', async (ctx) => {
          for (const v of values(ctx)) {
            const h = Math.floor(v.length / 2);
            process.stdout.write('split ' + v.slice(0, h));
            await sleep(5);
            process.stdout.write(v.slice(h) + '\\n');
          }
          // Across the pipeline's hold time (1 s): the held half is flushed on its own.
          for (const v of values(ctx).slice(0, 3)) {
            process.stderr.write('slow ' + v.slice(0, 6));
            await sleep(1500);
            process.stderr.write(v.slice(6) + '\\n');
          }
        })
        .step('shell', async (ctx) => {
          const vs = values(ctx);
          for (const v of vs) await ctx.$\`echo \${v}\`;
          vs.forEach((v, i) => ctx.setEnv('CANARY_ENV_' + i, v));
          await ctx.$\`env\`;
        })
        .step('outputs', async (ctx) => {
          const vs = values(ctx);
          return { token: vs[0], all: vs, json: JSON.stringify(vs) };
        })
        .step('secret-output', async (ctx) => {
          const derived = 'canary-derived-' + createHash('sha256').update(values(ctx)[0]).digest('hex');
          ctx.setSecretOutput('derived', derived);
          console.log('derived is ' + derived);
        })
        .step('emit', async (ctx) => {
          const vs = values(ctx);
          try {
            await ctx.emit('canary-leak', { token: vs[0], all: vs });
            console.log('emitted');
          } catch (error) {
            console.log('emit refused: ' + error.message);
          }
        })
        .step('workspace', async (ctx) => {
          await writeFile('leaked-by-user.txt', values(ctx).join('\\n'));
          await mkdir('report', { recursive: true });
          await writeFile('report/report.txt', 'no secrets here\\n');
          try {
            const up = await ctx.artifacts.upload('canary-report', ['report']);
            console.log('artifact uploaded ' + JSON.stringify(up));
          } catch (error) {
            console.log('artifact upload refused: ' + error.message);
          }
          // Held here while the test scans the agent's work dir (in-flight record included).
          const gate = ${JSON.stringify(gateDir)} + '/go';
          console.log('waiting for the scan');
          while (!existsSync(gate)) await sleep(100);
        }),
      outputs: (ctx) => ({ token: String(ctx.outputsOf('outputs').token), derived: String(ctx.outputsOf('secret-output').derived) }),
    }),
    fail: job({
      runsOn: 'e2e',
      needs: ['leak'],
      contexts: ['canary', 'canarytest'],
      steps: (s) => s.step('fails', async (ctx) => {
        console.log('job output token ' + String(ctx.jobOutputs('leak')?.token));
        for (const v of values(ctx)) console.log('about to fail with ' + v);
        const vs = values(ctx);
        throw new Error('deploy failed: ' + vs.join(' | '));
      }),
    }),
  },
});
`;

type Place = string;
type Hits = Map<string, Map<Place, number>>; // shape → place → hits

interface Scanner {
  shapes: Array<{ shape: string; value: string; needles: string[]; transformed: string[] }>;
  hits: Hits;
  transformedHits: Map<string, number>;
  checked: Map<Place, number>;
  where: string[];
}

function newScanner(secrets: Array<{ shape: string; value: string }>): Scanner {
  return {
    shapes: secrets.map((s) => ({ ...s, needles: needlesOf(s.value), transformed: transformedOf(s.value) })),
    hits: new Map(),
    transformedHits: new Map(),
    checked: new Map(),
    where: [],
  };
}

function scanText(sc: Scanner, place: Place, what: string, text: string): void {
  for (const s of sc.shapes) {
    for (const needle of s.needles) {
      if (text.includes(needle)) {
        const byPlace = sc.hits.get(s.shape) ?? new Map<Place, number>();
        byPlace.set(place, (byPlace.get(place) ?? 0) + 1);
        sc.hits.set(s.shape, byPlace);
        const at = text.indexOf(needle);
        sc.where.push(`${place}: ${what}: ${s.shape}: …${JSON.stringify(text.slice(Math.max(0, at - 80), at + 40))}…`);
        break;
      }
    }
    for (const form of s.transformed) if (form.length >= 8 && text.includes(form)) sc.transformedHits.set(place, (sc.transformedHits.get(place) ?? 0) + 1);
  }
}

function count(sc: Scanner, place: Place): void {
  sc.checked.set(place, (sc.checked.get(place) ?? 0) + 1);
}

/** Bytes: decompressed (gzip, zstd) and tar members read one by one, recursively. */
function scanBytes(sc: Scanner, place: Place, what: string, bytes: Buffer, depth = 0): void {
  if (depth > 4) return;
  if (bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      return scanBytes(sc, place, `${what} (gunzip)`, gunzipSync(bytes), depth + 1);
    } catch {
      /* not really gzip: scanned raw below */
    }
  }
  if (bytes.length > 4 && bytes.readUInt32LE(0) === 0xfd2fb528) {
    try {
      return scanBytes(sc, place, `${what} (zstd)`, zstdDecompressSync(bytes), depth + 1);
    } catch {
      /* scanned raw below */
    }
  }
  if (bytes.length >= 512 && bytes.subarray(257, 262).toString('latin1') === 'ustar') {
    let offset = 0;
    while (offset + 512 <= bytes.length) {
      const header = bytes.subarray(offset, offset + 512);
      if (header.every((b) => b === 0)) break;
      const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
      const size = parseInt(header.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
      scanText(sc, place, `${what} tar header`, header.toString('utf8'));
      scanBytes(sc, place, `${what}!${name}`, bytes.subarray(offset + 512, offset + 512 + size), depth + 1);
      count(sc, `${place} (tar members)`);
      offset += 512 + Math.ceil(size / 512) * 512;
    }
  }
  scanText(sc, place, what, bytes.toString('utf8'));
}

async function scanTree(sc: Scanner, place: (path: string) => Place | undefined, root: string, dir = root): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // removed while walking
  }
  for (const entry of entries) {
    const full = join(dir, entry.name);
    const rel = relative(root, full);
    if (entry.isDirectory()) {
      await scanTree(sc, place, root, full);
      continue;
    }
    const target = place(rel);
    if (target === undefined) continue;
    const info = await lstat(full).catch(() => undefined);
    if (info === undefined || !info.isFile()) continue;
    // A unix socket or fifo is not content; everything else is read whole.
    const bytes = await readFile(full).catch(() => undefined);
    if (bytes === undefined) continue;
    count(sc, target);
    scanBytes(sc, target, rel, bytes);
  }
}

/** A row's JSON: strings searched, strings holding JSON parsed and walked, bytea decoded. */
function scanJson(sc: Scanner, place: Place, what: string, value: unknown): void {
  if (typeof value === 'string') {
    scanText(sc, place, what, value);
    if (/^\\x[0-9a-f]*$/.test(value) && value.length > 2) scanBytes(sc, place, `${what} (bytea)`, Buffer.from(value.slice(2), 'hex'));
    const trimmed = value.trim();
    if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && trimmed.length > 1) {
      try {
        scanJson(sc, place, `${what} (json)`, JSON.parse(trimmed));
      } catch {
        /* not JSON */
      }
    }
  } else if (Array.isArray(value)) {
    for (const v of value) scanJson(sc, place, what, v);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      scanText(sc, place, `${what} key`, k);
      scanJson(sc, place, `${what}.${k}`, v);
    }
  }
}

async function scanDatabase(sc: Scanner, place: Place, url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const tables: string[] = [];
  try {
    const listed = await client.query<{ schema: string; name: string }>(`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') order by 1, 2`);
    for (const { schema, name } of listed.rows) {
      const ident = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`;
      tables.push(`${schema}.${name}`);
      const rows = await client.query<{ row: unknown; text: string }>(`select to_jsonb(t) as row, t::text as text from ${ident} t`);
      count(sc, place);
      for (const r of rows.rows) {
        scanJson(sc, place, `${schema}.${name}`, r.row);
        scanText(sc, place, `${schema}.${name} (row text)`, r.text);
      }
    }
  } finally {
    await client.end();
  }
  return tables;
}

function table(sc: Scanner, places: Place[]): string {
  const head = ['shape', ...places];
  const rows = sc.shapes.map((s) => [s.shape, ...places.map((p) => String(sc.hits.get(s.shape)?.get(p) ?? 0))]);
  const checked = ['(items checked)', ...places.map((p) => String(sc.checked.get(p) ?? 0))];
  const info = ['(base64/url forms seen)', ...places.map((p) => String(sc.transformedHits.get(p) ?? 0))];
  const all = [head, ...rows, checked, info];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  return all.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')).join('\n');
}

async function scanAgentDir(sc: Scanner, stack: JobsStack, place: Place, exceptUserFile: boolean): Promise<void> {
  const dirs = (await readdir(stack.root)).filter((d) => d.startsWith('agent-'));
  for (const d of dirs) {
    await scanTree(sc, (rel) => (exceptUserFile && rel.endsWith('leaked-by-user.txt') ? undefined : place), join(stack.root, d));
  }
}

await eachDatabase(t, async (t, db) => {
  const secrets = canaries();
  const testCtx = { shape: 'svc secrets set (test context)', key: 'TESTCTX', value: `canary-platform-${hex(8)}` };
  const all = [...secrets, testCtx];
  const derived = { shape: 'setSecretOutput (derived)', key: '', value: `canary-derived-${createHash('sha256').update(secrets[0]!.value).digest('hex')}` };
  t.ok(secrets.length <= KEYS_MAX && all.length + 1 >= 20, `${all.length + 1} canary shapes`);

  const stack = await startJobsStack(t, db, {
    orchestratorEnv: { SVC_SERVER_LOG_LEVEL: 'debug' },
    relayEnv: { SVC_SERVER_LOG_LEVEL: 'debug' },
  });
  const sc = newScanner([...all, derived]);
  const cliOut: string[] = [];
  // Secret files live outside the stack's root: the scan reads everything under it.
  const valueDir = await mkdtemp(join('/var/tmp', 'svc-canary-values-'));
  const gateDir = await mkdtemp(join('/var/tmp', 'svc-canary-gate-'));
  t.teardown(async () => {
    await rm(valueDir, { recursive: true, force: true });
    await rm(gateDir, { recursive: true, force: true });
  });
  const admin = async (args: string[]) => {
    const out = await stack.admin(args);
    t.equal(out.code, 0, `svc-admin ${args.slice(0, 3).join(' ')}: ${out.stderr}`);
    cliOut.push(out.stdout, out.stderr);
    return out;
  };
  await admin(['context', 'create', 'canary', '--repositories', 'acme/app', '--min-trust', 'any']);
  await admin(['context', 'create', 'canarytest', '--repositories', 'acme/app', '--min-trust', 'any', '--allow-local-execution']);
  for (const s of secrets) {
    if (s.shape === 'set with --value') {
      await admin(['secret', 'set', 'canary', s.key, '--value', s.value]);
      continue;
    }
    const file = join(valueDir, s.key);
    await writeFile(file, `${s.value}\n`, { mode: 0o600 });
    await admin(['secret', 'set', 'canary', s.key, '--value-file', file]);
  }
  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'alice', '--json']);
  t.equal(pat.code, 0, pat.stderr);
  const login = await stack.svc(['login', '--token', (JSON.parse(pat.stdout) as { token: string }).token, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  const set = await stack.svc(['secrets', 'set', 'canarytest', 'TESTCTX', '--value', testCtx.value]);
  t.equal(set.code, 0, `svc secrets set: ${set.stderr}`);
  cliOut.push(set.stdout, set.stderr);

  const agent = await stack.startAgent({ SVC_AGENT_ID: 'canary-agent', SVC_AGENT_LOG_LEVEL: 'debug' });
  const sha = await stack.pushWorkflow({ '.svc/workflows/canary.ts': workflow(gateDir) }, 'canary workflow');
  const run = await stack.runOf(sha, 120_000);

  // While the leak job waits on the gate: the agent's work dir with the job in flight.
  await until('the leak job waiting for the scan', async () => {
    const rows = await stack.jobsOf(run.id);
    const leak = rows.find((j) => j.name === 'leak');
    if (leak !== undefined && ['completed', 'failed', 'cancelled', 'skipped'].includes(leak.status)) throw new Error(`leak ended early: ${leak.status} ${leak.reason ?? ''}`);
    if (leak === undefined || leak.status !== 'running') return undefined;
    const text = (await stack.pool.anyFirst(sql.unsafe`select lines::text from job_logs where job_id = ${leak.id}`)) as string[];
    return text.some((l) => l.includes('waiting for the scan')) ? true : undefined;
  }, 240_000, 200);
  const inFlight = (await readdir(stack.root)).filter((d) => d.startsWith('agent-')).flatMap((d) => [join(stack.root, d, 'in-flight')]);
  const records = (await Promise.all(inFlight.map((d) => readdir(d).catch(() => [] as string[])))).flat();
  t.ok(records.length >= 1, `an in-flight record exists while the job runs (${records.join(', ')})`);
  await scanAgentDir(sc, stack, 'agent dir (running)', true);
  await writeFile(join(gateDir, 'go'), '');

  const ended = await stack.waitForRun(sha, 300_000);
  const jobs = await stack.jobsOf(run.id);
  const leak = jobs.find((j) => j.name === 'leak');
  const fail = jobs.find((j) => j.name === 'fail');
  t.equal(leak?.status, 'completed', `the leak job completed (${leak?.reason ?? ''})`);
  t.equal(fail?.status, 'failed', 'the fail job failed');
  t.equal(ended.status, 'failed', 'the run failed');
  const shown = await stack.svc(['runs', 'show', run.id, '--json']);
  const logs = await stack.svc(['runs', 'logs', run.id, '--json']);
  t.equal(logs.code, 0, logs.stderr);
  cliOut.push(shown.stdout, shown.stderr, logs.stdout, logs.stderr);
  // What the dashboard sends a browser: the run page (job outputs, attestations, lineage) and the
  // log stream, read with the same personal access token.
  const bearer = { authorization: `Bearer ${(JSON.parse(pat.stdout) as { token: string }).token}` };
  const runPage = await fetch(`${stack.relayUrl}/ui/orgs/${ORG}/runs/${run.id}`, { headers: bearer });
  const runHtml = await runPage.text();
  t.equal(runPage.status, 200, 'the dashboard run page answers');
  const leakOutputs = new RegExp(`<dl class="outputs" data-job="${leak!.id}">(.*?)</dl>`, 's').exec(runHtml)?.[1] ?? '';
  t.match(leakOutputs, /<dt class="mono">token<\/dt><dd><code>\*\*\*<\/code><\/dd>/, 'the run page shows the job output masked');
  const logStream = await fetch(`${stack.relayUrl}/ui/orgs/${ORG}/runs/${run.id}/logs/stream`, { headers: bearer, signal: AbortSignal.timeout(120_000) });
  const streamText = await logStream.text();
  t.match(streamText, /event: end/, 'the dashboard log stream was read to its end');
  const dashboardOut = [runHtml, streamText];
  // The leak was really attempted: the masked lines are there.
  t.match(logs.stdout, /plain \*\*\*/, 'the job printed the secrets (masked)');
  t.match(logs.stdout, new RegExp(`released ${all.length}`), 'every canary was released to the job');
  // Each data channel was really taken, and holds the mask where the value was.
  const emitted = (await stack.pool.maybeOne(sql.unsafe`select payload from internal_events where name = 'canary-leak' and run_id = ${run.id}`)) as { payload: { token: string; all: string[] } } | null;
  t.same(emitted?.payload, { token: '***', all: all.map(() => '***') }, 'the emitted payload was stored, masked');
  const outputs = (await stack.pool.oneFirst(sql.unsafe`select outputs from jobs where id = ${leak!.id}`)) as Record<string, unknown>;
  t.same(outputs, { token: '***', derived: '***' }, 'the job outputs were stored, masked');
  t.match(logs.stdout, /job output token \*\*\*/, 'the next job read the masked job output');
  t.match(logs.stdout, /artifact uploaded /, 'the artifact was uploaded');
  t.match(shown.stdout + logs.stdout, /deploy failed: \*\*\*/, 'the thrown error reached the log, masked');
  // For the record (docs/secrets.md): how the writes split across the 1 s hold came out.
  const slow = (JSON.parse(logs.stdout) as { logs: Record<string, Array<{ text: string }>> }).logs;
  const texts = Object.values(slow).flat().map((l) => l.text);
  const slowLines = texts.flatMap((text, i) => (text.includes('slow ') ? [text, texts[i + 1] ?? ''] : []));
  t.comment(`writes split across the hold: ${JSON.stringify(slowLines.slice(0, 6).map((l) => l.slice(0, 60)))}`);
  // Let the agent settle (job workspace cleanup) and stop it to flush its output.
  await until('the agent idle', async () => ((await readdir(join(stack.root, 'agent-1', 'in-flight')).catch(() => [])).length === 0 ? true : undefined), 60_000, 200);
  await agent.stop('SIGTERM').catch(() => undefined);

  for (const [place, text] of [
    ['relay log', stack.relay.stdout() + stack.relay.stderr()],
    ['orchestrator log', stack.orchestrator.stdout() + stack.orchestrator.stderr()],
    ['agent log', agent.stdout() + agent.stderr()],
    ['CLI output', cliOut.join('\n')],
    ['dashboard pages', dashboardOut.join('\n')],
  ] as const) {
    count(sc, place);
    for (const [i, line] of text.split('\n').entries()) {
      scanText(sc, place, `line ${i + 1}`, line);
      if (line.startsWith('{')) {
        try {
          scanJson(sc, place, `line ${i + 1}`, JSON.parse(line));
        } catch {
          /* not a JSON line */
        }
      }
    }
  }
  const orchTables = await scanDatabase(sc, 'orchestrator db', db.url);
  const relayTables = await scanDatabase(sc, 'relay db', stack.relayEnv['SVC_RELAY_DATABASE_URL']!);
  await scanTree(sc, (rel) => (rel.startsWith('orch/storage') ? 'storage objects' : rel.startsWith('agent-') ? 'agent dir (after)' : 'other data files'), stack.root);
  t.ok(orchTables.length > 20 && relayTables.length > 3, `${orchTables.length} orchestrator and ${relayTables.length} relay tables scanned`);
  t.ok((sc.checked.get('storage objects') ?? 0) > 0, 'storage objects were scanned');

  // The scan itself can fail: the value files (outside the stack), packed as a .tar.gz, are found
  // through gunzip and the tar members, every shape set from a file.
  const control = newScanner(all);
  const packed = join(valueDir, 'control.tar.gz');
  await tar.c({ gzip: true, file: packed, cwd: valueDir }, secrets.filter((s) => s.shape !== 'set with --value').map((s) => s.key));
  await scanTree(control, () => 'control', valueDir);
  const controlHits = [...control.hits.keys()];
  t.equal(controlHits.length, secrets.length - 1, `the scan finds each value in the plain files and inside a .tar.gz (${controlHits.length} shapes)`);
  t.ok((control.checked.get('control (tar members)') ?? 0) >= secrets.length - 1, 'through the tar members');

  const places = ['relay log', 'orchestrator log', 'agent log', 'CLI output', 'dashboard pages', 'orchestrator db', 'relay db', 'storage objects', 'storage objects (tar members)', 'agent dir (running)', 'agent dir (after)', 'other data files'];
  t.comment(`canary scan: ${sc.shapes.length} shapes × ${places.length} places (${db.kind})\n${table(sc, places)}`);
  const total = [...sc.hits.values()].reduce((n, m) => n + [...m.values()].reduce((a, b) => a + b, 0), 0);
  t.equal(total, 0, `zero hits${total > 0 ? `:\n${sc.where.slice(0, 60).join('\n')}` : ''}`);
});
