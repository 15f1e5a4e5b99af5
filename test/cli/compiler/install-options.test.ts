// `registries` and `installEnv` compile only where the runtime honours them: the agent's `npm ci`
// of `.svc/package-lock.json`. With a pnpm or yarn lockfile, or none, no lock is written and the
// message names the option (workflow/runtime-support.ts unhonouredInstall).
import t from 'tap';
import { compileWorkflows } from '../../../cli/compiler/compile.ts';
import { tempRepo } from '../../fixtures/workflow-trees/index.ts';

const WORKFLOW = (options: string) =>
  `import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('ci', { on: push(), contexts: ['npm'], ${options}, jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n`;
const REGISTRIES = "registries: [{ url: 'https://npm.example.com/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN' }]";
const INSTALL_ENV = "installEnv: ['npm:EXTRA']";
const NPM_LOCK = JSON.stringify({ name: 'wf', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'wf', version: '1.0.0' } } });

t.test('with .svc/package-lock.json both compile into the lock', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/ci.ts': WORKFLOW(`${REGISTRIES}, ${INSTALL_ENV}`), '.svc/package-lock.json': NPM_LOCK });
  const { lock } = await compileWorkflows({ repoRoot: dir, mode: 'memory' });
  t.match(lock.lockfileHash, /^npm:/);
  t.same(lock.workflows[0]?.registries, [{ url: 'https://npm.example.com/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: false }]);
  t.same(lock.workflows[0]?.installEnv, ['npm:EXTRA']);
});

t.test('a pnpm or yarn lockfile: refused, naming the option and the manager', async (t) => {
  for (const [file, manager] of [['pnpm-lock.yaml', 'pnpm'], ['yarn.lock', 'yarn']] as const) {
    const dir = tempRepo(t, { '.svc/workflows/ci.ts': WORKFLOW(REGISTRIES), [file]: 'lockfileVersion: 9\n' });
    await t.rejects(compileWorkflows({ repoRoot: dir, mode: 'memory' }), {
      code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE',
      message: new RegExp(`\\.svc/workflows/ci\\.ts.*at registries: .*registries — the dependencies are locked with ${manager}; this version installs \\.svc/ with npm only`),
    });
  }
  const env = tempRepo(t, { '.svc/workflows/ci.ts': WORKFLOW(INSTALL_ENV), 'yarn.lock': '# yarn\n' });
  await t.rejects(compileWorkflows({ repoRoot: env, mode: 'memory' }), { code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE', message: /at installEnv: .*installEnv — the dependencies are locked with yarn/ });
});

t.test('no lockfile at all: refused, nothing would install', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/ci.ts': WORKFLOW(`${REGISTRIES}, ${INSTALL_ENV}`) });
  await t.rejects(compileWorkflows({ repoRoot: dir }), { code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE', message: /registries — there is no \.svc\/package-lock\.json.*installEnv — there is no/ });
  const written = await compileWorkflows({ repoRoot: dir, mode: 'check' }).catch((error: unknown) => error);
  t.ok(written instanceof Error, 'check mode refuses the same way');
});
