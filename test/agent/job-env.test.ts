// The job environment policy in process: SVC_AGENT_PASS_ENV's syntax and refusals, which values
// pass, what the runner is spawned with and what the job's code gets, and the "still running"
// notices on a moved clock. The real runner behind a real proxy is test/agent/pass-env.test.ts.
import { mock } from 'node:test';
import t from 'tap';
import { DEFAULT_PASS_ENV, parseAgentEnv, parsePassEnv, passEnvFromShell, passEnvRefusal, passedEnvOf, passedReadPaths } from '../../agent/env.ts';
import { jobStartEnv, runnerSpawnRequest } from '../../agent/jobs/job-env.ts';
import { QuietNotice } from '../../agent/jobs/quiet-notice.ts';
import { gitEnv } from '../../agent/jobs/checkout.ts';
import { InputError } from '../../core/errors.ts';

const BASE = { SVC_ORCHESTRATOR_URL: 'http://orchestrator:7700' };

t.test('the default list names the proxy and CA-bundle variables package managers, git and curl read', async (t) => {
  for (const name of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'npm_config_cafile', 'GIT_SSL_CAINFO', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'NODE_USE_ENV_PROXY']) {
    t.ok(DEFAULT_PASS_ENV.includes(name), name);
  }
  for (const name of DEFAULT_PASS_ENV) t.equal(passEnvRefusal(name), undefined, `${name} may be passed`);
  t.same(parsePassEnv(undefined), DEFAULT_PASS_ENV, 'unset: the defaults');
  t.same(parsePassEnv('  '), DEFAULT_PASS_ENV, 'blank: the defaults');
  t.same(parsePassEnv('none'), [], 'none: nothing');
  t.same(parsePassEnv('HTTPS_PROXY, NO_PROXY'), ['HTTPS_PROXY', 'NO_PROXY'], 'a list replaces the defaults');
  t.same(parsePassEnv('default,PIP_INDEX_URL'), [...DEFAULT_PASS_ENV, 'PIP_INDEX_URL'], 'default plus one');
  t.same(parsePassEnv('default -ALL_PROXY -all_proxy'), DEFAULT_PASS_ENV.filter((n) => n !== 'ALL_PROXY' && n !== 'all_proxy'), 'default less two');
});

t.test('hostile or reserved names stop the agent at start, naming the variable and the reason', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['SVC_AGENT_TOKEN', /"SVC_AGENT_TOKEN", which cannot be passed: the agent's own settings \(its token among them\)/],
    ['default,svc_agent_token', /"svc_agent_token", which cannot be passed/],
    ['PATH', /"PATH", which cannot be passed: the agent sets it/],
    ['HOME', /"HOME", which cannot be passed/],
    ['LD_PRELOAD', /"LD_PRELOAD", which cannot be passed: it changes how every program/],
    ['NODE_OPTIONS', /"NODE_OPTIONS", which cannot be passed: it changes how the step runner itself starts/],
    ['NODE_CHANNEL_FD', /"NODE_CHANNEL_FD", which cannot be passed: the step runner's IPC channel/],
    ['FOO=bar', /"FOO=bar", which is not an environment variable name/],
    ['$(touch /tmp/x)', /"\$\(touch", which is not an environment variable name/],
    ['9LIVES', /"9LIVES", which is not an environment variable name/],
    ['HTTPS_PROXY,none', /can say "none" only alone/],
  ];
  for (const [value, message] of cases) {
    try {
      parseAgentEnv({ ...BASE, SVC_AGENT_PASS_ENV: value });
      t.fail(`${value} accepted`);
    } catch (error) {
      t.ok(error instanceof InputError && error.code === 'SVC_ERR_AGENT_ENV', `${value}: SVC_ERR_AGENT_ENV`);
      t.match((error as Error).message, /^SVC_AGENT_PASS_ENV names |^SVC_AGENT_PASS_ENV can say/);
      t.match((error as Error).message, message);
    }
  }
  t.throws(() => parsePassEnv('PATH', '--pass-env'), { message: /^--pass-env names "PATH"/ }, 'the CLI flag is named as such');
});

t.test('only variables that are set pass, with their values; nothing else of the agent environment', async (t) => {
  const settings = parseAgentEnv({ ...BASE, HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: '', NODE_EXTRA_CA_CERTS: '/etc/corp/ca.pem', SVC_AGENT_TOKEN: 'svcat_secret', AWS_SECRET_ACCESS_KEY: 'nope' });
  t.same(settings.passedEnv, { HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: '', NODE_EXTRA_CA_CERTS: '/etc/corp/ca.pem' });
  t.same(parseAgentEnv({ ...BASE, HTTPS_PROXY: 'http://proxy:3128', SVC_AGENT_PASS_ENV: 'none' }).passedEnv, {});
  t.same(passedEnvOf(['A', 'B'], { A: '1' }), { A: '1' });
  t.same(passEnvFromShell({ HTTPS_PROXY: 'http://p', SVC_AGENT_TOKEN: 't', SVC_AGENT_SANDBOX: 'container', HOME: '/home/dev' }), { HTTPS_PROXY: 'http://p' }, 'svc dev: only what the policy passes');
  t.same(passEnvFromShell({ HTTPS_PROXY: 'http://p', SVC_AGENT_PASS_ENV: 'none' }), { SVC_AGENT_PASS_ENV: 'none' }, 'and the policy itself');
  t.same(passedReadPaths({ NODE_EXTRA_CA_CERTS: '/tmp/x/../ca.pem', SSL_CERT_DIR: '/', HTTPS_PROXY: '/not/a/ca', GIT_SSL_CAINFO: 'relative.pem', SSL_CERT_FILE: '/etc/ssl/ca.pem' }), ['/tmp/ca.pem', '/etc/ssl/ca.pem'], 'absolute CA paths only, never "/"');
});

t.test("the runner's spawn environment and the job's environment", async (t) => {
  const passedEnv = { HTTPS_PROXY: 'http://proxy:3128', NODE_EXTRA_CA_CERTS: '/opt/ca.pem' };
  const request = runnerSpawnRequest({ runnerPath: '/svc/agent/runner/main.ts', readPaths: ['/node'], compileCacheDir: '/cache', passedEnv }, { dir: '/jobs/1/src', tmpDir: '/tmp/job-1' });
  t.match(request.env, { HTTPS_PROXY: 'http://proxy:3128', NODE_EXTRA_CA_CERTS: '/opt/ca.pem', HOME: '/tmp/job-1', TMPDIR: '/tmp/job-1', LANG: 'C.UTF-8', NODE_COMPILE_CACHE: '/cache' });
  t.same(request.readPaths, ['/node', '/cache', '/opt/ca.pem'], 'the CA bundle is readable in the sandbox');
  const bare = runnerSpawnRequest({ runnerPath: '/r', readPaths: [] }, { dir: '/w' });
  t.same(Object.keys(bare.env).sort(), ['HOME', 'LANG', 'PATH', 'TMPDIR'], 'no policy: the minimal environment');
  t.same(jobStartEnv(passedEnv, '/tmp/job-1', { DEPLOY_ENV: 'staging', HTTPS_PROXY: 'http://workflow-proxy' }), {
    HTTPS_PROXY: 'http://workflow-proxy',
    NODE_EXTRA_CA_CERTS: '/opt/ca.pem',
    HOME: '/tmp/job-1',
    TMPDIR: '/tmp/job-1',
    LANG: 'C.UTF-8',
    DEPLOY_ENV: 'staging',
  }, "the workflow's own env wins over a passed value");
  const git = gitEnv({ cloneUrl: 'https://forge/acme/app.git', token: 'tok-123456' }, '/tmp/home', '/usr/bin', { HTTPS_PROXY: 'http://proxy:3128', GIT_SSL_CAINFO: '/opt/ca.pem', HOME: '/elsewhere' });
  t.match(git, { HTTPS_PROXY: 'http://proxy:3128', GIT_SSL_CAINFO: '/opt/ca.pem', HOME: '/tmp/home', GIT_CONFIG_KEY_0: 'http.extraHeader' }, "the agent's git gets the passed variables; its own settings win");
});

t.test('"still running" after each quiet interval, counted from the step start; output and approvals reset it', async (t) => {
  // Moved time: the notice's clock and its timers advance together, no minute is waited out.
  mock.timers.enable({ apis: ['setTimeout'] });
  t.teardown(() => mock.timers.reset());
  let now = 0;
  const advance = (ms: number) => {
    for (let i = 0; i < ms / 1000; i++) {
      now += 1000;
      mock.timers.tick(1000);
    }
  };
  const lines: string[] = [];
  const quiet = new QuietNotice({ now: () => now, notice: (text) => lines.push(text) });
  quiet.start();
  advance(59_000);
  t.same(lines, [], 'nothing before a minute');
  advance(1_000);
  t.same(lines, ['still running (60 s)']);
  advance(30_000);
  quiet.output();
  advance(59_000);
  t.same(lines, ['still running (60 s)'], 'output restarts the quiet time');
  advance(1_000);
  t.same(lines, ['still running (60 s)', 'still running (150 s)']);
  advance(60_000);
  t.same(lines.at(-1), 'still running (210 s)', 'then every further quiet minute');
  quiet.step();
  advance(60_000);
  t.same(lines.at(-1), 'still running (60 s)', 'a new step counts from its start');
  let decide!: () => void;
  const paused = quiet.pauseDuring(new Promise<void>((resolve) => (decide = resolve)));
  const before = lines.length;
  advance(180_000);
  t.equal(lines.length, before, 'no notice while a step waits for its approval');
  decide();
  await paused;
  advance(59_000);
  t.equal(lines.length, before, 'the quiet time restarts after the decision');
  advance(1_000);
  t.equal(lines.length, before + 1);
  quiet.stop();
  advance(300_000);
  t.equal(lines.length, before + 1, 'stopped: nothing more');
});
