// `svc run push --local` behind a proxy: the user's proxy and CA variables reach the jobs by the
// agent's pass-through policy (SVC_AGENT_PASS_ENV, or --pass-env). A real git repository, the
// local run's real step runner, a local HTTPS server signed by a test CA reachable only through
// a local CONNECT proxy: with the defaults the job's fetch and curl get through; with `none`
// they do not. The job's HOME is its scratch directory, and a quiet step prints "still running".
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runLocal } from '../../../cli/local-run/run-local.ts';
import { commitAll, runSvc, tempRepo } from '../../fixtures/workflow-trees/index.ts';
import { PROXIED_BODY, startProxiedTls } from '../../fixtures/proxy-tls.ts';

const SECRET = 'sk_local_pass_env_secret';

const CI = `import { job, push, step, workflow } from 'svc/sdk';

export default workflow('ci', {
  on: push({ branches: ['main'] }),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: [
        step('environment', async (ctx) => {
          const { stdout } = await ctx.$\`sh -c \${'echo "home=$HOME"; test -d "$HOME" && test -w "$HOME" && echo writable'}\`;
          ctx.log.info(stdout.replace(/\\n/g, ' ') + ' key ' + ctx.secrets.get('API_KEY'));
        }),
        step('fetch', async (ctx) => {
          const url = (await import('node:fs')).readFileSync('target.txt', 'utf8').trim();
          try {
            ctx.log.info('fetch said ' + (await (await fetch(url)).text()));
          } catch (error) {
            ctx.log.info('fetch failed ' + String(error?.cause?.code ?? error?.message));
          }
          const curl = await ctx.$({ reject: false })\`curl -sS --max-time 10 \${url}\`;
          ctx.log.info('curl said ' + (curl.exitCode === 0 ? curl.stdout : 'exit ' + curl.exitCode));
        }),
        step('quiet', async (ctx) => {
          await ctx.$\`sleep 2\`;
        }),
      ],
    }),
  },
});
`;

t.test('the user’s proxy and CA variables reach a local run’s jobs by the pass-through policy', async (t) => {
  const certs = await mkdtemp(join(tmpdir(), 'svc-local-passenv-'));
  t.teardown(() => rm(certs, { recursive: true, force: true }));
  const net = await startProxiedTls(certs);
  t.teardown(() => net.close());
  const dir = tempRepo(t, { '.svc/.svcignore': 'node_modules/\ntypes/\n.secrets\n', '.svc/.secrets': `API_KEY=${SECRET}\n`, '.svc/workflows/ci.ts': CI, 'target.txt': `${net.url}\n` }, { git: true });
  commitAll(dir, 'workflows');
  // The user's shell behind the proxy; not the test process's own (this machine's SSL_CERT_DIR,
  // which curl prefers to SSL_CERT_FILE, names the system bundle without the test CA).
  const shellEnv = { PATH: process.env['PATH'], HTTPS_PROXY: net.proxyUrl, NODE_USE_ENV_PROXY: '1', NODE_EXTRA_CA_CERTS: net.caFile, SSL_CERT_FILE: net.caFile };
  const run = async (passEnv: string | undefined) => {
    let out = '';
    const summary = await runLocal({
      cwd: dir,
      event: 'push',
      env: [],
      ...(passEnv === undefined ? {} : { passEnv }),
      shellEnv,
      quietNoticeMs: 600,
      debug: false,
      write: (text) => void (out += text),
      diag: () => undefined,
    });
    return { summary, out };
  };
  const [passed, none] = await Promise.all([run(undefined), run('none')]);

  t.equal(passed.summary.status, 'completed', passed.out);
  t.match(passed.out, `[build] fetch | fetch said ${PROXIED_BODY}`, 'the default policy: the workflow code reaches the server through the proxy');
  t.match(passed.out, `[build] fetch | curl said ${PROXIED_BODY}`, 'and so does a command');
  t.match(passed.out, /\[build\] environment \| home=\/\S+ writable key \*\*\*/, 'HOME is set to a writable scratch directory; the secret is masked');
  t.notMatch(passed.out, SECRET);
  t.match(passed.out, /\[build\] quiet \| still running \(\d+ s\)/, 'a quiet step prints "still running" in the local log');

  t.equal(none.summary.status, 'completed', none.out);
  t.match(none.out, /\[build\] fetch \| fetch failed (ENOTFOUND|EAI_AGAIN)/, '--pass-env none: the job does not know the proxy');
  t.match(none.out, /\[build\] fetch \| curl said exit 6/);
  t.match(none.out, /\[build\] environment \| home=\/\S+ writable/, 'HOME does not depend on the policy');

  // The flag on the command line, refused before anything runs.
  const refused = await runSvc(dir, ['run', 'push', '--local', '--pass-env', 'default,SVC_AGENT_TOKEN']);
  t.not(refused.code, 0);
  t.match(refused.stderr, /--pass-env names "SVC_AGENT_TOKEN", which cannot be passed/);
  t.notMatch(refused.stdout, /event: push/, 'nothing ran');
});
