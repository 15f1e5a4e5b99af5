// core/container-options.ts: the honoured subset of `container.options` in both spellings
// (`--opt=value` and `--opt`, `value`), the runtime flags built from it, each refused option named
// with its reason, malformed values, and where the compile and the run-time lists read it
// (workflow/runtime-support.ts). Also the container runtime's own environment (runtimeEnv).
import t from 'tap';
import { containerRunFlags, describeContainerOptionProblem, parseContainerOptions } from '../../core/container-options.ts';
import { runtimeEnv } from '../../plugins/sandboxes/container/runtime.ts';
import { unhonouredFeatures, unhonouredRunFeatures } from '../../workflow/runtime-support.ts';
import type { LockWorkflow } from '../../schemas/lock.ts';

const parse = (options: string[]) => {
  const r = parseContainerOptions(options);
  if (!r.ok) throw new Error(describeContainerOptionProblem(r.problem));
  return r.options;
};

t.test('honoured options, both spellings, become --flag=value words', async (t) => {
  const joined = parse(['--memory=512m', '--cpus=0.5', '--pids-limit=64', '--shm-size=1g', '--network=none', '--read-only', '--tmpfs=/cache:size=64m,mode=1777', '--cap-drop=NET_RAW', '--security-opt=no-new-privileges', '--env=A=1']);
  const split = parse(['--memory', '512m', '--cpus', '0.5', '--pids-limit', '64', '--shm-size', '1g', '--network', 'none', '--read-only', '--tmpfs', '/cache:size=64m,mode=1777', '--cap-drop', 'net_raw', '--security-opt', 'no-new-privileges', '-e', 'A=1']);
  t.same(split, joined, 'the two spellings mean the same');
  t.same(containerRunFlags(joined), ['--memory=512m', '--cpus=0.5', '--pids-limit=64', '--shm-size=1g', '--read-only', '--tmpfs=/cache:size=64m,mode=1777', '--cap-drop=NET_RAW', '--security-opt=no-new-privileges']);
  t.equal(joined.network, 'none', 'the network is left to the sandbox, which knows its own setting');
  t.same(parse(['-m', '1g']).memory, '1g', '-m is --memory');
  t.same(parse(['--network', 'bridge']).network, 'bridge');
  t.same(parse([]), { env: [], readOnly: false, tmpfs: [], capDrop: [], noNewPrivileges: false }, 'no options: nothing added');
  t.same(parse(['--security-opt=no-new-privileges:true']).noNewPrivileges, true);
  t.same(parse(['--read-only=false']).readOnly, false);
});

t.test('--env: NAME=value only, values kept byte for byte (they are argv, never a shell word)', async (t) => {
  const value = 'x y;$(rm -rf /)|`id` "q" \'s\' =more';
  t.same(parse(['-e', `A=${value}`, `-eB=2`, '-e=C=', '--env', 'A=last']).env, [['A', value], ['B', '2'], ['C', ''], ['A', 'last']]);
  for (const [options, reason] of [
    [['--env', 'PATH'], /has no "=value": copying a variable from the agent's environment is not allowed/],
    [['-e', '1X=y'], /"1X" is not a valid environment variable name/],
    [['--env=NODE_CHANNEL_FD=9'], /NODE_CHANNEL_FD is the step runner's channel/],
    [['--env=SVC_RUNNER_IPC_SOCKET=/x'], /the step runner's channel/],
    [['--env=A=a\0b'], /NUL/],
  ] as const) {
    const r = parseContainerOptions(options as unknown as string[]);
    t.notOk(r.ok, options.join(' '));
    if (!r.ok) t.match(r.problem, { index: 0, kind: 'invalid', reason }, options.join(' '));
  }
});

t.test('refused options are named with the reason, in either spelling', async (t) => {
  const cases: Array<[string[], string, RegExp]> = [
    [['--privileged'], '--privileged', /access to the agent host/],
    [['--cap-add=SYS_ADMIN'], '--cap-add', /adding capabilities is not allowed/],
    [['-v', '/:/host'], '-v', /host bind mounts are not allowed/],
    [['-v/etc:/etc'], '-v', /host bind mounts/],
    [['--volume=/var/run/docker.sock:/s'], '--volume', /host bind mounts/],
    [['--mount', 'type=bind,src=/,dst=/h'], '--mount', /host mounts are not allowed/],
    [['--pid=host'], '--pid', /process namespace/],
    [['--network=host'], '--network', /--network host is not allowed/],
    [['--network', 'container:other'], '--network', /is not allowed/],
    [['--device=/dev/kvm'], '--device', /host devices/],
    [['--userns=host'], '--userns', /user namespace/],
    [['--ipc=host'], '--ipc', /IPC namespace/],
    [['--security-opt', 'seccomp=unconfined'], '--security-opt', /only --security-opt no-new-privileges is allowed/],
    [['--security-opt=apparmor=unconfined'], '--security-opt', /only --security-opt no-new-privileges/],
    [['--entrypoint=/bin/sh'], '--entrypoint', /step runner is the container's command/],
    [['--user', '1000'], '--user', /owns the bind-mounted workspace/],
    [['-u', '1000'], '-u', /owns the bind-mounted workspace/],
    [['--workdir=/src'], '--workdir', /give ctx.exec a cwd/],
    [['--env-file', '/etc/shadow'], '--env-file', /would read a file on the agent host/],
    [['--ulimit', 'nofile=1000000'], '--ulimit', /the agent sets the limits/],
    [['-p', '80:80'], '-p', /publishing ports/],
    [['-it'], '-i', /no terminal/],
    [['--sysctl', 'net.ipv4.ip_forward=1'], '--sysctl', /access to the agent host/],
    [['--frobnicate'], '--frobnicate', /not one of the options svc honours \(--env, --memory, .*docs\/sandboxes\.md\)/],
  ];
  for (const [options, option, reason] of cases) {
    const r = parseContainerOptions(['--memory=1g', ...options]);
    t.notOk(r.ok, options.join(' '));
    if (!r.ok) {
      t.match(r.problem, { index: 1, option, kind: 'refused', reason }, options.join(' '));
      t.match(describeContainerOptionProblem(r.problem), `container.options[1] (${option}) is refused: `);
    }
  }
});

t.test('malformed items and values say what to write', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['ubuntu'], /is not an option/],
    [['--'], /is not an option/],
    [['--memory 1g'], /is more than one argument: write "--memory=1g"/],
    [['--memory'], /needs a value/],
    [['--memory', '--cpus', '2'], /needs a value/],
    [['--memory=lots'], /"lots" is not a size/],
    [['--memory=0'], /not a size/],
    [['--cpus=0'], /not a positive number of CPUs/],
    [['--cpus=-1'], /not a positive number of CPUs/],
    [['--pids-limit=-1'], /0 and -1, "unlimited", are not allowed/],
    [['--pids-limit', '0'], /not a positive whole number/],
    [['--network=podman2'], /use none \(no network\) or bridge/],
    [['--tmpfs=relative'], /not an absolute container path/],
    [['--tmpfs=/a/../etc'], /not an absolute container path/],
    [['--tmpfs=/a:size=1m:x'], /not an absolute container path/],
    [['--tmpfs=/a:suid'], /tmpfs option "suid" is not allowed/],
    [['--cap-drop=ALL;rm'], /not a capability name/],
    [['--read-only=yes'], /not true or false/],
  ];
  for (const [options, reason] of cases) {
    const r = parseContainerOptions(options);
    t.notOk(r.ok, options.join(' '));
    if (!r.ok) t.match(r.problem, { index: 0, kind: 'invalid', reason }, options.join(' '));
  }
  const notString = parseContainerOptions([42 as unknown as string]);
  t.match(notString, { ok: false, problem: { option: '42', reason: /is not an option/ } }, 'a non-string item from a hand-made lock');
});

t.test('runtime-support lists a refused option for compile and for an older lock at the orchestrator', async (t) => {
  const job = (options: string[]) => ({ name: 'build', container: { image: 'node:24', options }, steps: [] }) as unknown as LockWorkflow['jobs'][number];
  const wf = (options: string[]) => ({ triggers: [], jobs: [job(options)] }) as unknown as LockWorkflow;
  t.same(unhonouredFeatures(wf(['--cpus', '2', '--read-only'])), [], 'honoured options are not listed');
  const listed = unhonouredRunFeatures(wf(['--cpus', '2', '--device', '/dev/sda']));
  t.match(listed, [{ path: 'jobs.build.container.options[2]', feature: 'container option --device', reason: /host devices are not allowed/ }]);
  t.same(unhonouredFeatures({ triggers: [], jobs: [{ name: 'x', steps: [] }] } as unknown as LockWorkflow), [], 'a job without a container');
});

t.test("the runtime's own environment: the agent's, without its SVC_ settings, PATH with the sbin directories", async (t) => {
  const env = runtimeEnv({ PATH: '/opt/node/bin:/usr/bin:/bin', HOME: '/home/ci', SVC_AGENT_TOKEN: 'tok', HTTPS_PROXY: 'http://proxy:3128', XDG_RUNTIME_DIR: '/run/user/1000' });
  t.same(env, { PATH: '/opt/node/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin', HOME: '/home/ci', HTTPS_PROXY: 'http://proxy:3128', XDG_RUNTIME_DIR: '/run/user/1000' });
  t.equal(runtimeEnv({ PATH: '/usr/sbin:/usr/bin' })['PATH'], '/usr/sbin:/usr/bin:/usr/local/sbin:/sbin', 'nothing appended twice');
  t.equal(runtimeEnv({})['PATH'], '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin', 'a default when the agent has no PATH');
});
