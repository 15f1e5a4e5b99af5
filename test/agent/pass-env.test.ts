// The job environment is the operator's policy (SVC_AGENT_PASS_ENV): a real agent with the REAL
// step runner in the process sandbox (bubblewrap when installed) reaches an HTTPS server whose
// certificate a test CA signed, only through a local CONNECT proxy, from a job step: the workflow
// code's own fetch (Node's NODE_USE_ENV_PROXY and NODE_EXTRA_CA_CERTS, read when the runner
// starts) and a command (curl with HTTPS_PROXY and SSL_CERT_FILE). It fails when the policy
// passes nothing or leaves the CA out, and passes with the defaults. The same jobs: a scratch
// HOME, secrets still masked (the passed values are not), and "still running" lines for a
// step that prints nothing.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../agent/agent.ts';
import { parseAgentEnv } from '../../agent/env.ts';
import { createProcessSandbox } from '../../plugins/sandboxes/process/index.ts';
import { dispatchOf } from './fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble, type OrchestratorDouble } from './fixtures/ws-orchestrator.ts';
import { PROXIED_BODY, startProxiedTls } from '../fixtures/proxy-tls.ts';

const SECRET = 'sk_pass_env_secret_value';

const WORKFLOW = `import { job, push, step, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: [
        step('environment', async (ctx) => {
          const key = await ctx.secrets.get('API_KEY');
          ctx.log.info('key ' + key + ' proxy ' + String(process.env.HTTPS_PROXY));
          const { stdout } = await ctx.$\`sh -c \${'echo "home=$HOME tmp=$TMPDIR"'}\`;
          ctx.log.info('shell ' + stdout.trim() + ' same=' + String(stdout.includes('home=' + process.env.HOME + ' ') && process.env.HOME !== undefined));
        }),
        step('fetch', async (ctx) => {
          const url = ctx.env.TARGET_URL;
          try {
            const res = await fetch(url);
            ctx.log.info('fetch said ' + (await res.text()));
          } catch (error) {
            ctx.log.info('fetch failed ' + String(error?.cause?.code ?? error?.message));
          }
          const curl = await ctx.$({ reject: false })\`curl -sS --max-time 10 \${url}\`;
          ctx.log.info('curl said ' + (curl.exitCode === 0 ? curl.stdout : 'exit ' + curl.exitCode + ' ' + curl.stderr.split('\\n')[0]));
        }),
        step('quiet', async (ctx) => {
          await ctx.$\`sleep 2.5\`;
        }),
      ],
    }),
  },
});
`;

interface JobRun {
  status: string;
  text: string;
}

t.test('SVC_AGENT_PASS_ENV decides whether a job behind a proxy reaches its registry', async (t) => {
  const tmp = await tempDir('svc-agent-passenv-');
  const net = await startProxiedTls(tmp.dir);
  const files = await fileServer();
  t.teardown(async () => {
    await files.close();
    await net.close();
    await tmp.cleanup();
  });
  const tree = await makeTree(join(tmp.dir, 'a'), { '.svc/workflows/ci.ts': WORKFLOW });
  const digest = await tarball(tree.dir, join(tmp.dir, 's.tar.gz'));
  files.put('s', await readFile(join(tmp.dir, 's.tar.gz')));
  // What the operator's shell holds behind the proxy (the test process's own is not used).
  const shell = { HTTPS_PROXY: net.proxyUrl, NODE_USE_ENV_PROXY: '1', NODE_EXTRA_CA_CERTS: net.caFile, SSL_CERT_FILE: net.caFile };

  // One agent per policy, each with its own orchestrator (the double dispatches to every agent).
  const runJob = async (name: string, policy: string | undefined, quietNoticeMs?: number): Promise<JobRun> => {
    const orch = await startOrchestratorDouble();
    t.teardown(() => orch.close());
    const settings = parseAgentEnv({
      ...shell,
      SVC_ORCHESTRATOR_URL: orch.url,
      SVC_AGENT_WORK_DIR: join(tmp.dir, `w-${name}`),
      ...(policy === undefined ? {} : { SVC_AGENT_PASS_ENV: policy }),
    });
    const agent = await startAgent({
      settings,
      agentId: `pass-env-${name}`,
      logger: pino({ level: 'silent' }),
      sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'auto', network: true })]]),
      runnerPath: DEFAULT_RUNNER_PATH,
      warmRunner: false,
      ...(quietNoticeMs === undefined ? {} : { quietNoticeMs }),
    });
    try {
      const d = dispatchOf({ sourceTarUrl: files.url('s'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { TARGET_URL: net.url }, secrets: { API_KEY: SECRET } } });
      orch.dispatch(d);
      const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
      return { status: done.status, text: logText(orch, d.jobId) };
    } finally {
      await agent.stop();
    }
  };

  // The three agents run side by side: their steps mostly wait on the network and a sleep.
  const [none, noCa, defaults] = await Promise.all([runJob('none', 'none'), runJob('no-ca', 'default,-NODE_EXTRA_CA_CERTS,-SSL_CERT_FILE'), runJob('default', undefined, 700)]);
  t.equal(none.status, 'completed', none.text);
  t.match(none.text, /fetch\|fetch failed (ENOTFOUND|EAI_AGAIN)/, 'policy "none": the name resolves only through the proxy, which the job does not know');
  t.match(none.text, /fetch\|curl said exit \d+ curl: \(6\)/, 'policy "none": curl cannot resolve it either');
  t.match(none.text, /key \*\*\* proxy undefined/);

  t.match(noCa.text, /fetch\|fetch failed UNABLE_TO_VERIFY_LEAF_SIGNATURE/, 'through the proxy, but the test CA is not trusted');
  t.match(noCa.text, /fetch\|curl said exit 60/, 'curl: certificate problem');

  t.equal(defaults.status, 'completed', defaults.text);
  t.match(defaults.text, `fetch|fetch said ${PROXIED_BODY}`, "the workflow code's own fetch goes through the proxy and trusts the CA");
  t.match(defaults.text, `fetch|curl said ${PROXIED_BODY}`, 'so does a command the step runs');
  t.equal(net.tunnels.length, 4, 'the proxy tunnelled the two requests of each job that knew it (no-ca, default)');
  t.match(defaults.text, `key *** proxy ${net.proxyUrl}`, 'the secret is masked; the passed proxy address is not a secret');
  t.notMatch(defaults.text, SECRET);
  t.match(defaults.text, /environment\|shell home=\/\S+ tmp=\/\S+ same=true/, "HOME and TMPDIR are the job's scratch directory, for code and commands alike");
  t.match(defaults.text, /quiet\|still running \(\d+ s\)/, 'a step that prints nothing gets a "still running" line');
  t.notMatch(defaults.text, /environment\|still running/, 'a step that prints at once gets none');
});

function logText(orch: OrchestratorDouble, jobId: string): string {
  return orch.received.flatMap((m) => (m.type === 'log.chunk' && m.jobId === jobId ? m.lines.map((l) => `${l.step}|${l.text}`) : [])).join('\n');
}
