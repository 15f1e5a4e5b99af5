// svc beside Buildbot (Debian's 3.7, sqlite, one worker with max_builds=1), same commits, same signed push webhooks.
// Three systems run at once, each from a temporary directory, loopback only:
//   Buildbot: a master and a worker (bench/peers/lib/buildbot-master.ts), changes through its
//     github change hook (POST signed with HMAC-SHA1); one builder per case;
//   svc: svc-relay, svc-orchestrator and svc-agent from dist/ as three processes on the system
//     PostgreSQL (bench/peers/lib/svc-systems.ts);
//   svc dev: the same roles in one process on its embedded PostgreSQL.
// One test repository (a real git repository; one new commit per change) feeds all three; each
// change is announced to every system in turn (the order rotates per change) and followed to
// green before the next. Cases: `bare` (a step running `echo hello`), `checkout` (a checkout of
// the commit, then that step), `nomatch` (a push nothing is configured for: the webhook's answer).
// Prints per system, with n and the source of every time: announce → echo step started and →
// green (p50/p90/max), a burst of changes → all green (throughput, one agent / one worker),
// webhook answer p50/p99, idle PSS (PostgreSQL apart), the svc/Buildbot ratios, and each hop of
// svc's push-to-green path (p50, from the webhook's arrival at the relay).
// Run: node bench/peers/buildbot.ts [--changes N=30] [--burst N=200] [--webhooks N=100] [--busy] [--quick] [--keep-data]
//   needs: apt-get install -y buildbot buildbot-worker; npm run build (the compiled programs).
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bucketQuantile, distBin, keepOrRemove, repoRoot, scrapeBuckets, withMachine } from '../lib/machine.ts';
import { requireBuildbot, startBuildbot, type BuildbotPeer } from './lib/buildbot-master.ts';
import { createTestRepository, ms, quantile, spread, wallMs, type PushCase } from './lib/common.ts';
import { startProductionLayout, startSvcDev, type SvcPeer } from './lib/svc-systems.ts';

const { values } = parseArgs({
  options: {
    changes: { type: 'string', default: '30' },
    burst: { type: 'string', default: '200' },
    webhooks: { type: 'string', default: '100' },
    busy: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    'keep-data': { type: 'boolean', default: false },
  },
});
const bounded = (raw: string, quick: number, max: number) => Math.max(1, Math.min(max, values.quick ? quick : Math.floor(Number(raw)) || 1));
const CHANGES = bounded(values.changes, 3, 500);
const BURST = bounded(values.burst, 10, 2000);
const WEBHOOKS = bounded(values.webhooks, 10, 2000);

const STEP = "async (ctx) => { console.log((await ctx.$`echo hello`).stdout); }";
const WORKFLOWS: Record<string, string> = {
  '.svc/workflows/bare.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('bare', { on: push({ branches: ['bare'] }), jobs: { echo: job({ runsOn: ['local'], checkout: false, steps: (s) => s.step('echo', ${STEP}) }) } });
`,
  '.svc/workflows/checkout.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('checkout', { on: push({ branches: ['checkout'] }), jobs: { echo: job({ runsOn: ['local'], steps: (s) => s.step('echo', ${STEP}) }) } });
`,
  'README.md': '# peers bench repository\n',
};

/** What the bench needs of every system. */
interface Peer {
  key: string;
  label: string;
  sync(): void;
  announce(body: Buffer, deliveryId: string): Promise<number>;
  /** Absolute times (ms since the epoch) of the echo step's start, green, and the named hops. */
  follow(sha: string, branch: PushCase, deliveryId: string): Promise<{ stepStarted: number; green: number; hops: Array<[string, number]>; jobId?: string }>;
  /** Green times of a burst's changes once all are green. */
  allGreen(changes: ReadonlyArray<{ sha: string; deliveryId: string }>, timeoutMs: number): Promise<number[]>;
  programsMiB(): number;
  programsDetail(): string;
  postgresMiB(): Promise<{ mib: number; note: string }>;
  scrape?(): Promise<string>;
  agentPhases?(jobId: string): Record<string, number> | undefined;
  stop(): Promise<void>;
}

function buildbotPeer(bb: BuildbotPeer, version: string): Peer {
  return {
    key: 'buildbot',
    label: `Buildbot (${version}; sqlite, 1 worker, max_builds=1)`,
    sync: () => undefined,
    announce: (body) => bb.announce(body),
    async follow(sha, branch) {
      const t = await bb.timeline(sha, branch, 120_000);
      if (t.results !== 0) throw new Error(`Buildbot's buildset of ${sha.slice(0, 8)} ended with results ${t.results}`);
      return {
        stepStarted: t.stepStarted,
        green: t.buildsetComplete,
        hops: [['change stored', t.changeStored], ['buildset created', t.buildsetCreated], ['build started', t.buildStarted], ['echo step started', t.stepStarted], ['echo step finished', t.stepFinished], ['build finished', t.buildFinished], ['buildset complete (green)', t.buildsetComplete]],
      };
    },
    async allGreen(changes, timeoutMs) {
      const out: number[] = [];
      for (const c of changes) out.push((await bb.timeline(c.sha, 'bare', timeoutMs)).buildsetComplete);
      return out;
    },
    programsMiB: () => bb.memoryMiB(),
    programsDetail: () => bb.memoryDetail(),
    postgresMiB: async () => ({ mib: 0, note: 'none: sqlite inside the master' }),
    stop: () => bb.stop(),
  };
}

function svcPeer(key: string, svc: SvcPeer, withAgentPhases: boolean): Peer {
  return {
    key,
    label: svc.name,
    sync: () => svc.sync(),
    announce: (body, id) => svc.announce(body, id),
    async follow(_sha, _branch, deliveryId) {
      const t = await svc.timeline(deliveryId, 120_000);
      return {
        stepStarted: t.stepStarted,
        green: t.runFinished,
        hops: [
          ['relay received', t.received], ['delivery stored + run created + job queued', t.runCreated], ['job dispatched', t.dispatched], ['agent: job running', t.jobRunning],
          ['echo step started', t.stepStarted], ['echo step finished', t.stepFinished], ['job finished', t.jobFinished], ['run finished (green)', t.runFinished],
        ],
        jobId: t.jobId,
      };
    },
    allGreen: (changes, timeoutMs) => svc.finishedAll(changes.map((c) => c.deliveryId), timeoutMs),
    programsMiB: () => svc.programsMiB(),
    programsDetail: () => svc.programsDetail(),
    postgresMiB: () => svc.postgresMiB(),
    scrape: async () => (await Promise.all([svc.relayUrl, svc.orchestratorUrl].map(async (url) => (await fetch(`${url}/metrics`)).text()))).join('\n'),
    ...(withAgentPhases ? { agentPhases: (jobId: string) => svc.agentTimings.get(jobId) } : {}),
    stop: () => svc.stop(),
  };
}

const rotate = <T>(xs: readonly T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length]!);
const CASES = ['bare', 'checkout'] as const;

interface Series {
  step: number[];
  green: number[];
  answer: number[];
  hops: Map<string, number[]>;
  agent: Map<string, number[]>;
}
const newSeries = (): Series => ({ step: [], green: [], answer: [], hops: new Map(), agent: new Map() });
const push = (map: Map<string, number[]>, key: string, value: number) => (map.get(key) ?? map.set(key, []).get(key)!).push(value);

async function main(version: string): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'svc-peers-'));
  const peers: Peer[] = [];
  try {
    const repo = createTestRepository(root, WORKFLOWS, (work) => {
      execFileSync(process.execPath, [join(repoRoot, 'dist', 'bin', 'svc.js'), 'compile'], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
    });
    const started = async (what: string, start: () => Promise<Peer>) => {
      const t0 = performance.now();
      const peer = await start();
      peers.push(peer);
      console.log(`started ${what} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    };
    await started('Buildbot', async () => buildbotPeer(await startBuildbot(join(root, 'buildbot'), repo.bare), version));
    await started('svc (production layout)', async () => svcPeer('svc', await startProductionLayout(join(root, 'svc'), repo.bare), true));
    await started('svc dev', async () => svcPeer('svc dev', await startSvcDev(root, repo.work, repo.bare), false));
    const [buildbot, svc, dev] = peers as [Peer, Peer, Peer];

    /** One change of a case to every system in turn; the measured series when `series` is given. */
    const announceAll = async (i: number, branch: (typeof CASES)[number], series?: Map<string, Series>) => {
      const sha = repo.commit();
      const before = repo.publish(sha, branch);
      const body = await repo.pushBody(before, sha, branch);
      for (const peer of rotate(peers, i)) {
        peer.sync();
        const deliveryId = `peers-${branch}-${i}-${series === undefined ? 'warm' : 'run'}-${sha.slice(0, 12)}`;
        const sent = wallMs();
        const status = await peer.announce(body, deliveryId);
        const answered = wallMs();
        if (status < 200 || status >= 300) throw new Error(`${peer.label} answered ${status} to a push`);
        const f = await peer.follow(sha, branch, deliveryId);
        const s = series?.get(`${peer.key}/${branch}`);
        if (s === undefined) continue;
        s.step.push(f.stepStarted - sent);
        s.green.push(f.green - sent);
        s.answer.push(answered - sent);
        for (const [name, at] of f.hops) push(s.hops, name, at - sent);
        const phases = f.jobId === undefined ? undefined : peer.agentPhases?.(f.jobId);
        for (const [phase, v] of Object.entries(phases ?? {})) push(s.agent, phase, v);
      }
    };

    // Warm-up (not counted): svc's first run of the workflows' content builds its source cache;
    // Buildbot's first checkout clones; every process's code paths compile.
    for (let i = 0; i < 2; i += 1) for (const branch of CASES) await announceAll(i, branch);

    const series = new Map<string, Series>();
    for (const peer of peers) for (const branch of CASES) series.set(`${peer.key}/${branch}`, newSeries());
    const scrapes = new Map<string, string>();
    for (const peer of peers) if (peer.scrape) scrapes.set(peer.key, await peer.scrape());
    const phase = performance.now();
    const progress = (what: string) => console.log(`${what} (${((performance.now() - phase) / 1000).toFixed(0)} s in)`);
    for (let i = 0; i < CHANGES; i += 1) {
      for (const branch of CASES) await announceAll(i, branch, series);
      if ((i + 1) % 10 === 0 && i + 1 < CHANGES) progress(`sequential series: ${i + 1} of ${CHANGES} changes per case`);
    }
    progress('sequential series done');
    const hopHistograms = new Map<string, Array<[string, number]>>();
    for (const peer of peers) if (peer.scrape) hopHistograms.set(peer.key, histogramHops(scrapes.get(peer.key)!, await peer.scrape(), false));

    // Webhook answers for pushes nothing is configured for.
    for (const peer of peers) if (peer.scrape) scrapes.set(peer.key, await peer.scrape());
    const answers = new Map<string, number[]>(peers.map((p) => [p.key, []]));
    for (let i = 0; i < WEBHOOKS; i += 1) {
      const sha = repo.commit();
      const before = repo.publish(sha, 'nomatch');
      const body = await repo.pushBody(before, sha, 'nomatch');
      for (const peer of rotate(peers, i)) {
        peer.sync();
        const sent = wallMs();
        const status = await peer.announce(body, `peers-nomatch-${i}-${sha.slice(0, 12)}`);
        answers.get(peer.key)!.push(wallMs() - sent);
        if (status < 200 || status >= 300) throw new Error(`${peer.label} answered ${status} to a no-match push`);
      }
    }

    progress('no-match webhooks done');
    const noMatchHistograms = new Map<string, Array<[string, number]>>();
    for (const peer of peers) if (peer.scrape) noMatchHistograms.set(peer.key, histogramHops(scrapes.get(peer.key)!, await peer.scrape(), true));

    // Idle memory: every system idle for 3 s.
    await new Promise((r) => setTimeout(r, 3000));
    const memory = new Map<string, { programs: number; detail: string; postgres: { mib: number; note: string } }>();
    for (const peer of peers) memory.set(peer.key, { programs: peer.programsMiB(), detail: peer.programsDetail(), postgres: await peer.postgresMiB() });

    // The burst: the same BURST new commits (one per change) to each system, all announced as fast
    // as each answers, then followed until every one is green.
    const shas: string[] = [];
    for (let i = 0; i < BURST; i += 1) shas.push(repo.commit());
    let previous = repo.publish(shas.at(-1)!, 'bare');
    const bodies: Buffer[] = [];
    for (const sha of shas) {
      bodies.push(await repo.pushBody(previous, sha, 'bare'));
      previous = sha;
    }
    const bursts = new Map<string, { seconds: number; sendSeconds: number }>();
    for (const peer of rotate(peers, CHANGES)) {
      peer.sync();
      const changes = shas.map((sha, i) => ({ sha, deliveryId: `peers-burst-${i}-${sha.slice(0, 12)}` }));
      const first = wallMs();
      for (let i = 0; i < changes.length; i += 1) {
        const status = await peer.announce(bodies[i]!, changes[i]!.deliveryId);
        if (status < 200 || status >= 300) throw new Error(`${peer.label} answered ${status} in the burst`);
      }
      const sent = wallMs();
      const greens = await peer.allGreen(changes, 60_000 + BURST * 3_000);
      bursts.set(peer.key, { seconds: (Math.max(...greens) - first) / 1000, sendSeconds: (sent - first) / 1000 });
      progress(`burst: ${peer.key} done`);
    }

    report({ version, series, answers, memory, bursts, hopHistograms, noMatchHistograms, buildbot, svc, dev });
  } finally {
    for (const peer of peers.reverse()) await peer.stop().catch((error: unknown) => console.error(`stopping ${peer.label}: ${(error as Error).message}`));
    keepOrRemove(root, values['keep-data']);
  }
}

function report(r: {
  version: string;
  series: Map<string, Series>;
  answers: Map<string, number[]>;
  memory: Map<string, { programs: number; detail: string; postgres: { mib: number; note: string } }>;
  bursts: Map<string, { seconds: number; sendSeconds: number }>;
  hopHistograms: Map<string, Array<[string, number]>>;
  noMatchHistograms: Map<string, Array<[string, number]>>;
  buildbot: Peer;
  svc: Peer;
  dev: Peer;
}): void {
  const peers = [r.buildbot, r.svc, r.dev];
  const out = (line = '') => process.stdout.write(`${line}\n`);
  out();
  out(`Each change is one new commit of one test repository, announced by a signed POST (Buildbot: its github change hook, HMAC-SHA1;`);
  out(`svc: the relay's webhook URL of a git source, HMAC-SHA256, the body svc's post-receive hook sends), to the three systems in turn.`);
  out(`Times: "announce" is this process's wall clock just before the POST. Buildbot's events are time.time() stamps written by a`);
  out(`message-queue consumer inside its master (the Stamps service in the generated master.cfg): its own records keep whole seconds.`);
  out(`svc's are its orchestrator's records: the echo step's job_steps.started_at (the agent's clock) and the run's runs.finished_at.`);
  out(`Green: Buildbot's buildset 'complete' event; svc's run 'completed'. All clocks are this machine's.`);
  for (const peer of peers) {
    out();
    out(`${peer.label}`);
    for (const branch of CASES) {
      const s = r.series.get(`${peer.key}/${branch}`)!;
      const what = branch === 'bare' ? 'no checkout' : 'with checkout';
      out(`  announce → echo step started, ${what.padEnd(13)} ${spread(s.step)}`);
      out(`  announce → green, ${what.padEnd(13)}             ${spread(s.green)}`);
      out(`  webhook answer, ${what.padEnd(13)}              ${spread(s.answer)}`);
    }
    const burst = r.bursts.get(peer.key)!;
    out(`  burst of ${BURST} changes → all green: ${burst.seconds.toFixed(1)} s (${(BURST / burst.seconds).toFixed(1)} changes/s; the ${BURST} POSTs took ${burst.sendSeconds.toFixed(1)} s; from the first POST to the last green record)`);
    const a = r.answers.get(peer.key)!;
    out(`  webhook answer, no match: p50 ${ms(quantile(a, 0.5))}  p99 ${ms(quantile(a, 0.99))}  (n=${a.length}; POST sent → answer read, this process)`);
    const m = r.memory.get(peer.key)!;
    out(`  idle PSS: programs ${m.programs.toFixed(0)} MiB (${m.detail}); PostgreSQL ${m.postgres.mib > 0 ? `${m.postgres.mib.toFixed(0)} MiB` : '–'} (${m.postgres.note}) (/proc/<pid>/smaps_rollup, process trees)`);
  }

  // The ratios: Buildbot's time over svc's (above 1: svc is faster by that factor).
  out();
  out(`svc faster by (Buildbot ÷ svc, p50; above 1 is faster, below 1 slower); svc dev in brackets:`);
  const p50 = (peer: Peer, branch: string, key: 'step' | 'green') => quantile(r.series.get(`${peer.key}/${branch}`)![key], 0.5);
  const ratio = (b: number, s: number) => `${(b / s).toFixed(2)}x`;
  for (const branch of CASES) {
    for (const key of ['step', 'green'] as const) {
      const b = p50(r.buildbot, branch, key);
      out(`  ${key === 'step' ? 'step started' : 'green'}, ${branch === 'bare' ? 'no checkout' : 'with checkout'}: Buildbot ${ms(b)}, svc ${ms(p50(r.svc, branch, key))} → ${ratio(b, p50(r.svc, branch, key))} (svc dev ${ms(p50(r.dev, branch, key))} → ${ratio(b, p50(r.dev, branch, key))})`);
    }
  }
  const rate = (peer: Peer) => BURST / r.bursts.get(peer.key)!.seconds;
  out(`  burst throughput: Buildbot ${rate(r.buildbot).toFixed(1)}/s, svc ${rate(r.svc).toFixed(1)}/s → ${ratio(rate(r.svc), rate(r.buildbot))} (svc dev ${rate(r.dev).toFixed(1)}/s → ${ratio(rate(r.dev), rate(r.buildbot))})`);
  const ans = (peer: Peer, q: number) => quantile(r.answers.get(peer.key)!, q);
  out(`  webhook answer p50 / p99: ${ratio(ans(r.buildbot, 0.5), ans(r.svc, 0.5))} / ${ratio(ans(r.buildbot, 0.99), ans(r.svc, 0.99))} (svc dev ${ratio(ans(r.buildbot, 0.5), ans(r.dev, 0.5))} / ${ratio(ans(r.buildbot, 0.99), ans(r.dev, 0.99))})`);
  const mem = (peer: Peer) => r.memory.get(peer.key)!.programs;
  out(`  idle PSS of the programs (PostgreSQL apart): Buildbot ${mem(r.buildbot).toFixed(0)} MiB ÷ svc ${mem(r.svc).toFixed(0)} MiB → ${ratio(mem(r.buildbot), mem(r.svc))} (svc dev ${mem(r.dev).toFixed(0)} MiB → ${ratio(mem(r.buildbot), mem(r.dev))})`);

  // Where the time goes: each hop's p50, cumulative from the announce.
  for (const branch of CASES) {
    out();
    out(`Hops, ${branch === 'bare' ? 'no checkout' : 'with checkout'}: p50 of each event's time after the announce (n=${CHANGES} each)`);
    for (const peer of peers) {
      const s = r.series.get(`${peer.key}/${branch}`)!;
      out(`  ${peer.key}: ${[...s.hops].map(([name, xs]) => `${name} ${ms(quantile(xs, 0.5))}`).join(', ')}`);
      if (s.agent.size > 0) out(`    agent set-up phases p50 (its 'job set-up timings' debug line; ms each, total = job running → first step): ${[...s.agent].map(([name, xs]) => `${name} ${ms(quantile(xs, 0.5))}`).join(', ')}`);
    }
  }
  out();
  out(`svc's ingest hops, p50 over the sequential changes of both cases (the relay's and orchestrator's /metrics histograms, interpolated in their buckets):`);
  const line = (hops: Array<[string, number]>) => hops.filter(([, v]) => !Number.isNaN(v)).map(([name, v]) => `${name} ${ms(v)}`).join('; ');
  for (const [key, hops] of r.hopHistograms) out(`  ${key}: ${line(hops)}`);
  out(`The same for the no-match webhooks (what their answer waits for):`);
  for (const [key, hops] of r.noMatchHistograms) out(`  ${key}: ${line(hops)}`);
}

/** p50 of svc's ingest hop histograms between two scrapes of the relay's and orchestrator's /metrics. */
function histogramHops(before: string, after: string, noMatch: boolean): Array<[string, number]> {
  const p50 = (name: string, labels = '') => bucketQuantile(scrapeBuckets(before, name, labels), scrapeBuckets(after, name, labels), 0.5) * 1000;
  return [
    ['relay: arrival → webhook.deliver frame sent', p50('svc_relay_forward_seconds')],
    ['relay: frame sent → ack', p50('svc_relay_ack_seconds')],
    ['orchestrator: frame received → records committed', p50('svc_orch_relay_delivery_seconds', 'stage="receive_to_commit"')],
    ['  of it: ingest steps (verify, lock read at the commit, match, caches)', p50('svc_orch_ingest_stage_seconds', 'stage="steps"')],
    ...(noMatch
      ? ([['  of it: waiting for the batched record write', p50('svc_orch_ingest_stage_seconds', 'stage="batch_wait"')], ['  of it: the batched write and its commit', p50('svc_orch_ingest_stage_seconds', 'stage="batch_write"')]] as Array<[string, number]>)
      : ([
          ['  of it: the one statement (record, run, jobs) and its commit', p50('svc_orch_ingest_stage_seconds', 'stage="one_statement"')],
          ['  of it: a pooled connection and BEGIN', p50('svc_orch_ingest_stage_seconds', 'stage="connection"')],
          ['  of it: the statements (record, run, jobs)', p50('svc_orch_ingest_stage_seconds', 'stage="statements"')],
          ['  of it: COMMIT', p50('svc_orch_ingest_stage_seconds', 'stage="commit"')],
        ] as Array<[string, number]>)),
    ['orchestrator: commit → ack written', p50('svc_orch_relay_delivery_seconds', 'stage="commit_to_ack"')],
  ];
}

// Refused before anything starts: Buildbot missing (the apt command), or dist/ not built.
const version = requireBuildbot();
distBin('svc-orchestrator');
await withMachine(values.busy, 3600, () => main(version));
