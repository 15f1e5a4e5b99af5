// The `container.options` a job may give its container (docs/sandboxes.md "container.options"),
// checked the same way at compile (workflow/compile/job-entries.ts, workflow/runtime-support.ts)
// and on the agent before the runtime is started (a lock compiled by an older version). An option
// is honoured only if it is in HONOURED; everything else is refused by name, since the agent is
// shared and a flag like `--privileged` or a host bind mount would hand the host to the job.
// The parsed options become argv words the sandbox builds itself: the author's strings never reach
// a shell and never reach the runtime unchecked. A small hand tokenizer rather than util.parseArgs:
// in its non-strict mode `--memory --cpus 2` takes `--cpus` as the value and `-v/x:/y` becomes a
// cluster of one-letter flags, which would name the wrong option in the refusal.

import { RUNNER_IPC_SOCKET_ENV } from './ipc/framed-json.ts';

export interface ContainerRunOptions {
  /** `--env NAME=value`, in order (a later one wins). */
  env: ReadonlyArray<readonly [string, string]>;
  memory?: string;
  cpus?: string;
  pidsLimit?: string;
  shmSize?: string;
  /** `none`, or `bridge` (the runtime's default network). */
  network?: 'none' | 'bridge';
  readOnly: boolean;
  /** `PATH` or `PATH:opts`. */
  tmpfs: readonly string[];
  capDrop: readonly string[];
  noNewPrivileges: boolean;
}

export interface ContainerOptionProblem {
  /** Index of the item in `options`. */
  index: number;
  /** The option as written (`--privileged`, `-v`). */
  option: string;
  /** `refused`: never honoured on this runtime; `invalid`: an honoured option with a bad value. */
  kind: 'refused' | 'invalid';
  reason: string;
}

export type ParsedContainerOptions = { ok: true; options: ContainerRunOptions } | { ok: false; problem: ContainerOptionProblem };

type Kind = 'string' | 'boolean';
const HONOURED: Readonly<Record<string, Kind>> = {
  env: 'string',
  memory: 'string',
  cpus: 'string',
  'pids-limit': 'string',
  'shm-size': 'string',
  network: 'string',
  'read-only': 'boolean',
  tmpfs: 'string',
  'cap-drop': 'string',
  'security-opt': 'string',
};
const SHORT: Readonly<Record<string, string>> = { e: 'env', m: 'memory', v: 'volume', u: 'user', w: 'workdir', p: 'publish', P: 'publish-all', i: 'interactive', t: 'tty', d: 'detach', h: 'hostname', l: 'label', a: 'attach' };

const HOST_ACCESS = 'it would give the job access to the agent host, which other jobs share';
const REFUSED: Readonly<Record<string, string>> = {
  privileged: HOST_ACCESS,
  'cap-add': `adding capabilities is not allowed: ${HOST_ACCESS}`,
  volume: 'host bind mounts are not allowed (the workspace and the scratch directory are mounted for you; use --tmpfs for an empty writable directory)',
  mount: 'host mounts are not allowed (the workspace and the scratch directory are mounted for you; use --tmpfs for an empty writable directory)',
  'volumes-from': HOST_ACCESS,
  device: `host devices are not allowed: ${HOST_ACCESS}`,
  'device-cgroup-rule': HOST_ACCESS,
  pid: `sharing a process namespace is not allowed: ${HOST_ACCESS}`,
  ipc: `sharing an IPC namespace is not allowed: ${HOST_ACCESS}`,
  uts: `sharing the UTS namespace is not allowed: ${HOST_ACCESS}`,
  userns: `choosing the user namespace is not allowed: ${HOST_ACCESS}`,
  cgroupns: HOST_ACCESS,
  'cgroup-parent': HOST_ACCESS,
  sysctl: HOST_ACCESS,
  'group-add': HOST_ACCESS,
  'env-file': 'it would read a file on the agent host; give each variable with --env NAME=value',
  'env-host': "it would copy the agent's own environment (and its credentials) into the job",
  entrypoint: "svc's step runner is the container's command; set up the image in a step instead",
  user: 'the step runner must run as the user that owns the bind-mounted workspace; switch user inside a step (e.g. with su or setpriv) instead',
  workdir: 'steps run in the job workspace (mounted at the same path as on the agent); give ctx.exec a cwd instead',
  publish: 'publishing ports on the agent host is not allowed',
  'publish-all': 'publishing ports on the agent host is not allowed',
  ulimit: 'the agent sets the limits every job gets; use --pids-limit or --memory to lower them',
  runtime: 'the agent chooses the OCI runtime',
  rm: 'svc removes the container itself',
  name: 'svc names the container (it stops it by that name)',
  'preserve-fds': "svc's step runner channel uses it",
  rootfs: 'the job runs the image named by container.image',
  pull: 'the agent pulls the image as its runtime is configured to',
  hostname: 'not supported by this version',
  'add-host': 'not supported by this version',
  dns: 'not supported by this version',
  init: 'not supported by this version',
  interactive: 'a CI job has no terminal',
  tty: 'a CI job has no terminal',
  detach: 'svc waits for the job',
  attach: 'svc attaches the job output itself',
  label: 'svc labels its containers itself',
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The step runner's own channel: a job setting these would cut it off from the agent. */
const RESERVED_ENV = new Set(['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE', RUNNER_IPC_SOCKET_ENV]);
const SIZE = /^[1-9][0-9]{0,15}(?:[bkmg]|[kmg]i?b)?$/i;
const CPUS = /^(?:[0-9]{1,4})(?:\.[0-9]{1,3})?$/;
const PIDS = /^[1-9][0-9]{0,6}$/;
const CAP = /^(?:ALL|(?:CAP_)?[A-Z][A-Z_]{1,40})$/i;
const TMPFS_PATH = /^\/[A-Za-z0-9._/-]{1,250}$/;
const TMPFS_OPT = /^(?:size=[1-9][0-9]{0,15}[kmg]?|mode=[0-7]{3,4}|rw|ro|noexec|exec|nosuid|nodev)$/i;
const NO_NEW_PRIVILEGES = new Set(['no-new-privileges', 'no-new-privileges=true', 'no-new-privileges:true']);

/** Why `value` is not valid for `name` (a string: `invalid`), or null. */
function valueProblem(name: string, value: string): string | { refused: string } | null {
  switch (name) {
    case 'env': {
      const eq = value.indexOf('=');
      if (eq < 0) return `${JSON.stringify(value)} has no "=value": copying a variable from the agent's environment is not allowed; write NAME=value`;
      const key = value.slice(0, eq);
      if (!ENV_NAME.test(key)) return `${JSON.stringify(key)} is not a valid environment variable name`;
      if (RESERVED_ENV.has(key)) return `${key} is the step runner's channel to the agent and cannot be set`;
      if (value.includes('\0')) return 'the value contains a NUL character';
      return null;
    }
    case 'memory':
    case 'shm-size':
      return SIZE.test(value) ? null : `${JSON.stringify(value)} is not a size (a positive number with an optional unit b, k, m or g: 512m, 2g)`;
    case 'cpus':
      return CPUS.test(value) && Number(value) > 0 ? null : `${JSON.stringify(value)} is not a positive number of CPUs (1, 0.5, 2.5)`;
    case 'pids-limit':
      return PIDS.test(value) ? null : `${JSON.stringify(value)} is not a positive whole number (0 and -1, "unlimited", are not allowed)`;
    case 'network':
      if (value === 'none' || value === 'bridge') return null;
      return value === 'host' || value.startsWith('container:') || value.startsWith('ns:')
        ? { refused: `--network ${value} is not allowed: ${HOST_ACCESS}` }
        : `${JSON.stringify(value)} is not allowed: use none (no network) or bridge (the runtime's default network)`;
    case 'tmpfs': {
      const [path = '', opts, ...rest] = value.split(':');
      if (rest.length > 0 || !TMPFS_PATH.test(path) || path.split('/').some((s) => s === '..' || s === '.')) return `${JSON.stringify(value)} is not an absolute container path (with optional :options)`;
      const bad = opts === undefined ? undefined : opts.split(',').find((o) => !TMPFS_OPT.test(o));
      return bad === undefined ? null : `tmpfs option ${JSON.stringify(bad)} is not allowed (size=, mode=, rw, ro, noexec, exec, nosuid, nodev)`;
    }
    case 'cap-drop':
      return CAP.test(value) ? null : `${JSON.stringify(value)} is not a capability name (ALL, NET_RAW, CAP_SYS_CHROOT)`;
    case 'security-opt':
      return NO_NEW_PRIVILEGES.has(value) ? null : { refused: `only --security-opt no-new-privileges is allowed; ${JSON.stringify(value)} would change the confinement every job on this agent relies on` };
    case 'read-only':
      return value === 'true' || value === 'false' ? null : `${JSON.stringify(value)} is not true or false`;
    default:
      return null;
  }
}

type Building = Omit<ContainerRunOptions, 'env' | 'tmpfs' | 'capDrop'> & { env: Array<[string, string]>; tmpfs: string[]; capDrop: string[] };

function apply(out: Building, name: string, value: string): void {
  switch (name) {
    case 'env': {
      const eq = value.indexOf('=');
      out.env.push([value.slice(0, eq), value.slice(eq + 1)]);
      return;
    }
    case 'memory':
      out.memory = value;
      return;
    case 'cpus':
      out.cpus = value;
      return;
    case 'pids-limit':
      out.pidsLimit = value;
      return;
    case 'shm-size':
      out.shmSize = value;
      return;
    case 'network':
      out.network = value as 'none' | 'bridge';
      return;
    case 'read-only':
      out.readOnly = value === 'true';
      return;
    case 'tmpfs':
      out.tmpfs.push(value);
      return;
    case 'cap-drop':
      out.capDrop.push(value.toUpperCase());
      return;
    case 'security-opt':
      out.noNewPrivileges = true;
  }
}

/** Parse `container.options` (one argument per item; `--opt=value` or `--opt`, `value`). */
export function parseContainerOptions(items: readonly string[]): ParsedContainerOptions {
  const out: Building = { env: [], readOnly: false, tmpfs: [], capDrop: [], noNewPrivileges: false };
  const fail = (index: number, option: string, kind: ContainerOptionProblem['kind'], reason: string): ParsedContainerOptions => ({ ok: false, problem: { index, option, kind, reason } });
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const at = i;
    if (typeof item !== 'string' || !item.startsWith('-') || item === '-' || item === '--') {
      return fail(i, String(item), 'invalid', 'is not an option: each item is one option or its value (the image is container.image; the command is the step runner)');
    }
    let name: string;
    let inline: string | undefined;
    if (item.startsWith('--')) {
      const eq = item.indexOf('=');
      name = eq < 0 ? item.slice(2) : item.slice(2, eq);
      inline = eq < 0 ? undefined : item.slice(eq + 1);
      if (/\s/.test(name)) return fail(i, item, 'invalid', `is more than one argument: write ${JSON.stringify(item.replace(/\s+/, '='))} or give the value as the next item`);
    } else {
      const long = SHORT[item[1]!];
      name = long ?? item[1]!;
      const rest = item.slice(2);
      inline = rest === '' ? undefined : rest.startsWith('=') ? rest.slice(1) : rest;
    }
    const shown = item.startsWith('--') ? `--${name}` : item.slice(0, 2);
    const kind = HONOURED[name];
    if (kind === undefined) {
      const reason = REFUSED[name] ?? `it is not one of the options svc honours (${Object.keys(HONOURED).map((k) => `--${k}`).join(', ')}; docs/sandboxes.md)`;
      return fail(i, shown, 'refused', reason);
    }
    let value: string;
    if (kind === 'boolean') {
      value = inline ?? 'true';
    } else if (inline !== undefined) {
      value = inline;
    } else {
      const next = items[i + 1];
      if (typeof next !== 'string' || next.startsWith('-')) return fail(i, shown, 'invalid', 'needs a value (as --option=value, or the value as the next item)');
      value = next;
      i++;
    }
    const problem = valueProblem(name, value);
    if (typeof problem === 'string') return fail(at, shown, 'invalid', problem);
    if (problem !== null) return fail(at, shown, 'refused', problem.refused);
    apply(out, name, value);
  }
  return { ok: true, options: out };
}

/** One line naming the option: `container.options[2] (--privileged): ...`. */
export function describeContainerOptionProblem(problem: ContainerOptionProblem): string {
  return `container.options[${problem.index}] (${problem.option}) is ${problem.kind === 'refused' ? 'refused' : 'not valid'}: ${problem.reason}`;
}

/**
 * The runtime flags for `options` other than the network and the environment (the sandbox
 * decides those with its own settings), as `--flag=value` words so no value can be read as a flag.
 */
export function containerRunFlags(options: ContainerRunOptions): string[] {
  const flags: string[] = [];
  if (options.memory !== undefined) flags.push(`--memory=${options.memory}`);
  if (options.cpus !== undefined) flags.push(`--cpus=${options.cpus}`);
  if (options.pidsLimit !== undefined) flags.push(`--pids-limit=${options.pidsLimit}`);
  if (options.shmSize !== undefined) flags.push(`--shm-size=${options.shmSize}`);
  if (options.readOnly) flags.push('--read-only');
  for (const t of options.tmpfs) flags.push(`--tmpfs=${t}`);
  for (const c of options.capDrop) flags.push(`--cap-drop=${c}`);
  if (options.noNewPrivileges) flags.push('--security-opt=no-new-privileges');
  return flags;
}
