// Jobs and steps → lock entries, plus the checks that span jobs: unique names and a `needs`
// graph without unknown names or cycles.
import type { LockCheckout, LockConcurrency, LockDynamicRef, LockJob, LockMatrix, LockStep } from '../../schemas/lock.ts';
import { parseContainerOptions } from '../../core/container-options.ts';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';
import { normalizeApproval } from './normalize-approval.ts';
import { testResultPatterns } from './test-results.ts';
import { normalizeRetry } from './normalize-retry.ts';
import { JOB_NAME } from './normalize-triggers.ts';
import {
  arrayOf,
  CONTEXT_NAME,
  expectObject,
  isFunction,
  isPlainObject,
  labelMatchers,
  nameSet,
  optionalBoolean,
  optionalInteger,
} from './validate-fields.ts';

const JOB_FIELDS = [
  'name', 'runsOn', 'needs', 'matrix', 'context', 'contexts', 'concurrency', 'container', 'checkout', 'gracePeriod',
  'timeout', 'routing', 'rules', 'approval', 'retry', 'outputs', 'steps', 'generate',
  'onCancel', 'cleanup', 'onSuccess', 'onFailure', 'beforeStep', 'afterStep', 'testResults',
];
const STEP_FIELDS = ['rules', 'outputs', 'check', 'whenInSync', 'onCancel', 'cleanup', 'approval', 'timeout', 'testResults'];
const MATRIX_AXIS = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const MAX_MATRIX_SIZE = 256;
const MAX_TIMEOUT_MS = 7 * 86_400_000;
const MAX_HOOK_TIMEOUT_MS = 86_400_000;
const STEP_NAME = /^[^\u0000-\u001f]{1,100}$/;

/** Hooks are functions or `{ run, timeout }` (milliseconds); returns whether one is present. */
export function hookPresent(scope: CompileScope, path: string, value: unknown): true | undefined {
  if (value === undefined) return undefined;
  if (isFunction(value)) return true;
  const hook = isPlainObject(value) ? value : scope.fail(CompileErrorCode.invalidHook, path, 'must be a function or { run, timeout }');
  expectObject(scope, path, hook, ['run', 'timeout']);
  if (!isFunction(hook['run'])) scope.fail(CompileErrorCode.invalidHook, childPath(path, 'run'), 'must be a function');
  optionalInteger(scope, childPath(path, 'timeout'), hook['timeout'], { min: 1, max: MAX_HOOK_TIMEOUT_MS, unit: 'milliseconds' });
  return true;
}

/** Rules → dynamic references; the closures stay in the definition. */
export function ruleRefs(scope: CompileScope, path: string, refBase: string, value: unknown): LockDynamicRef[] | undefined {
  if (value === undefined) return undefined;
  const refs = arrayOf(scope, path, value, (item, itemPath) => {
    const r = isPlainObject(item) ? item : scope.fail(CompileErrorCode.invalidDefinition, itemPath, 'must be built with rule(name, fn) or skip(reason, fn)');
    if (r['kind'] !== 'svc.rule' || !isFunction(r['fn']) || (r['mode'] !== 'run' && r['mode'] !== 'skip')) {
      scope.fail(CompileErrorCode.invalidDefinition, itemPath, 'must be built with rule(name, fn) or skip(reason, fn)');
    }
    if (typeof r['name'] !== 'string' || r['name'].trim() === '') scope.fail(CompileErrorCode.invalidName, childPath(itemPath, 'name'), 'a rule needs a name (or a skip reason)');
    return { name: r['name'], mode: r['mode'] as 'run' | 'skip', ref: '' };
  });
  return refs.map((ref, index) => ({ ...ref, ref: childPath(refBase, index) }));
}

export function concurrency(scope: CompileScope, path: string, value: unknown): LockConcurrency | undefined {
  if (value === undefined) return undefined;
  const c = expectObject(scope, path, value, ['group', 'cancelInProgress', 'max']);
  const group = c['group'];
  if (group !== undefined && !isFunction(group) && (typeof group !== 'string' || group.trim() === '')) {
    scope.fail(CompileErrorCode.invalidValue, childPath(path, 'group'), 'must be a non-empty string or a function');
  }
  const out: LockConcurrency = {
    hasGroup: group !== undefined,
    cancelInProgress: optionalBoolean(scope, childPath(path, 'cancelInProgress'), c['cancelInProgress']) ?? false,
  };
  const max = optionalInteger(scope, childPath(path, 'max'), c['max'], { min: 1, max: 10_000 });
  if (max !== undefined) out.max = max;
  return out;
}

export function timeoutMs(scope: CompileScope, path: string, value: unknown): number | undefined {
  return optionalInteger(scope, path, value, { min: 1, max: MAX_TIMEOUT_MS, unit: 'milliseconds' });
}

function matrix(scope: CompileScope, path: string, value: unknown): LockMatrix | undefined {
  if (value === undefined) return undefined;
  if (isFunction(value)) return { type: 'dynamic', ref: path };
  if (!isPlainObject(value)) scope.fail(CompileErrorCode.invalidMatrix, path, 'must be a record of arrays or a function');
  const axes: Record<string, (string | number | boolean)[]> = {};
  let size = 1;
  for (const [axis, values] of Object.entries(value)) {
    const axisPath = childPath(path, axis);
    if (!MATRIX_AXIS.test(axis)) scope.fail(CompileErrorCode.invalidMatrix, axisPath, `${JSON.stringify(axis)} is not a valid axis name`);
    if (!Array.isArray(values) || values.length === 0) scope.fail(CompileErrorCode.invalidMatrix, axisPath, 'must be a non-empty array');
    const seen = new Set<string>();
    values.forEach((v: unknown, index: number) => {
      const ok = typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
      if (!ok) scope.fail(CompileErrorCode.invalidMatrix, childPath(axisPath, index), 'must be a string, finite number or boolean');
      const key = `${typeof v}:${String(v)}`;
      if (seen.has(key)) scope.fail(CompileErrorCode.invalidMatrix, childPath(axisPath, index), `duplicates ${JSON.stringify(v)}`);
      seen.add(key);
    });
    axes[axis] = [...(values as (string | number | boolean)[])];
    size *= values.length;
  }
  if (Object.keys(axes).length === 0) scope.fail(CompileErrorCode.invalidMatrix, path, 'needs at least one axis');
  if (size > MAX_MATRIX_SIZE) scope.fail(CompileErrorCode.invalidMatrix, path, `expands to ${size} jobs; the limit is ${MAX_MATRIX_SIZE}`);
  return { type: 'static', axes, size };
}

function checkout(scope: CompileScope, path: string, value: unknown): LockCheckout {
  const defaults: LockCheckout = { enabled: true, depth: 1, submodules: false, lfs: false };
  if (value === undefined || value === true) return defaults;
  if (value === false) return { ...defaults, enabled: false };
  const c = expectObject(scope, path, value, ['depth', 'submodules', 'lfs']);
  return {
    enabled: true,
    depth: optionalInteger(scope, childPath(path, 'depth'), c['depth'], { min: 0, max: 1_000_000 }) ?? 1,
    submodules: optionalBoolean(scope, childPath(path, 'submodules'), c['submodules']) ?? false,
    lfs: optionalBoolean(scope, childPath(path, 'lfs'), c['lfs']) ?? false,
  };
}

function container(scope: CompileScope, path: string, value: unknown): LockJob['container'] {
  if (value === undefined) return undefined;
  const c = typeof value === 'string' ? { image: value } : expectObject(scope, path, value, ['image', 'options']);
  const image = c['image'];
  if (typeof image !== 'string' || image === '' || /\s/.test(image)) scope.fail(CompileErrorCode.invalidValue, childPath(path, 'image'), 'must be an image reference without spaces');
  const options = arrayOf(scope, childPath(path, 'options'), c['options'], (item, itemPath) => {
    if (typeof item !== 'string' || item === '') scope.fail(CompileErrorCode.invalidValue, itemPath, 'must be a non-empty string');
    return item;
  });
  // A malformed option fails here; a well-formed one svc never honours (`--privileged`) is
  // listed by workflow/runtime-support.ts, which refuses the lock naming it.
  const parsed = parseContainerOptions(options);
  if (!parsed.ok && parsed.problem.kind === 'invalid') {
    scope.fail(CompileErrorCode.invalidValue, childPath(childPath(path, 'options'), parsed.problem.index), `${parsed.problem.option}: ${parsed.problem.reason}`);
  }
  return { image, options };
}

function stepEntry(scope: CompileScope, path: string, value: unknown): LockStep {
  const s = isPlainObject(value) || (typeof value === 'object' && value !== null) ? (value as Record<string, unknown>) : undefined;
  if (s === undefined || s['kind'] !== 'svc.step') scope.fail(CompileErrorCode.invalidStep, path, 'must be built with step(name, fn, options?)');
  const name = s['name'];
  if (typeof name !== 'string' || name.trim() === '' || !STEP_NAME.test(name)) scope.fail(CompileErrorCode.invalidName, childPath(path, 'name'), 'a step needs a name of 1 to 100 printable characters');
  if (!isFunction(s['run'])) scope.fail(CompileErrorCode.invalidStep, path, `step ${JSON.stringify(name)} has no function to run`);
  const optionsPath = childPath(path, 'options');
  const o = expectObject(scope, optionsPath, s['options'] ?? {}, STEP_FIELDS);
  const outputs = o['outputs'];
  if (outputs !== undefined && (!isPlainObject(outputs) && typeof outputs !== 'object' || (outputs as { type?: unknown } | null)?.type !== 'object')) {
    scope.fail(CompileErrorCode.invalidStep, childPath(optionsPath, 'outputs'), 'must be an object schema such as Type.Object({ … })');
  }
  for (const key of ['check', 'whenInSync'] as const) {
    if (o[key] !== undefined && !isFunction(o[key])) scope.fail(CompileErrorCode.invalidStep, childPath(optionsPath, key), 'must be a function');
  }
  if (o['whenInSync'] !== undefined && o['check'] === undefined) {
    scope.fail(CompileErrorCode.invalidStep, childPath(optionsPath, 'whenInSync'), 'needs a check: it runs only when check reports no drift');
  }
  const entry: LockStep = { name, hasOutputs: outputs !== undefined };
  if (o['check'] !== undefined) entry.hasCheck = true;
  if (o['whenInSync'] !== undefined) entry.hasWhenInSync = true;
  const rules = ruleRefs(scope, childPath(optionsPath, 'rules'), childPath(path, 'rules'), o['rules']);
  if (rules !== undefined && rules.length > 0) entry.hasRules = true;
  if (hookPresent(scope, childPath(optionsPath, 'onCancel'), o['onCancel'])) entry.hasOnCancel = true;
  if (hookPresent(scope, childPath(optionsPath, 'cleanup'), o['cleanup'])) entry.hasCleanup = true;
  const approval = normalizeApproval(scope, childPath(optionsPath, 'approval'), o['approval']);
  if (approval !== undefined) entry.approval = approval;
  const timeout = timeoutMs(scope, childPath(optionsPath, 'timeout'), o['timeout']);
  if (timeout !== undefined) entry.timeout = timeout;
  const results = testResultPatterns(scope, childPath(optionsPath, 'testResults'), o['testResults']);
  if (results !== undefined) entry.testResults = results;
  return entry;
}

function jobEntry(scope: CompileScope, path: string, name: string, value: Record<string, unknown>): LockJob {
  const optionsPath = childPath(path, 'options');
  const o = expectObject(scope, optionsPath, value['options'], JOB_FIELDS);
  const at = (key: string) => childPath(optionsPath, key);
  const dynamic = value['dynamic'] === true;
  const contextNames = nameSet(scope, at('contexts'), o['contexts'], CONTEXT_NAME, 'context name');
  if (o['context'] !== undefined) contextNames.push(...nameSet(scope, at('context'), [o['context']], CONTEXT_NAME, 'context name'));
  const entry: LockJob = {
    name,
    runsOn: labelMatchers(scope, at('runsOn'), o['runsOn'], { required: true }),
    needs: nameSet(scope, at('needs'), o['needs'], JOB_NAME, 'job name'),
    contexts: [...new Set(contextNames)].sort(),
    checkout: checkout(scope, at('checkout'), o['checkout']),
    steps: [],
  };
  const m = matrix(scope, at('matrix'), o['matrix']);
  if (m !== undefined) entry.matrix = m.type === 'dynamic' ? { type: 'dynamic', ref: childPath(path, 'matrix') } : m;
  const conc = concurrency(scope, at('concurrency'), o['concurrency']);
  if (conc !== undefined) entry.concurrency = conc;
  const cont = container(scope, at('container'), o['container']);
  if (cont !== undefined) entry.container = cont;
  const grace = optionalInteger(scope, at('gracePeriod'), o['gracePeriod'], { min: 0, max: 3600, unit: 'seconds' });
  if (grace !== undefined) entry.gracePeriod = grace;
  const timeout = timeoutMs(scope, at('timeout'), o['timeout']);
  if (timeout !== undefined) entry.timeout = timeout;
  if (o['routing'] !== undefined) {
    const r = expectObject(scope, at('routing'), o['routing'], ['prefer', 'avoid']);
    entry.routing = {
      prefer: labelMatchers(scope, childPath(at('routing'), 'prefer'), r['prefer'], { required: false }),
      avoid: labelMatchers(scope, childPath(at('routing'), 'avoid'), r['avoid'], { required: false }),
    };
  }
  const rules = ruleRefs(scope, at('rules'), childPath(path, 'rules'), o['rules']);
  if (rules !== undefined && rules.length > 0) entry.rules = rules;
  const approval = normalizeApproval(scope, at('approval'), o['approval']);
  if (approval !== undefined) entry.approval = approval;
  const retry = normalizeRetry(scope, at('retry'), o['retry']);
  if (retry !== undefined) entry.retry = retry;
  if (o['outputs'] !== undefined) {
    if (!isFunction(o['outputs'])) scope.fail(CompileErrorCode.invalidValue, at('outputs'), 'must be a function of the step outputs');
    entry.hasOutputs = true;
  }
  const hooks = [
    ['onCancel', 'hasOnCancel'], ['cleanup', 'hasCleanup'], ['onSuccess', 'hasOnSuccess'],
    ['onFailure', 'hasOnFailure'], ['beforeStep', 'hasBeforeStep'], ['afterStep', 'hasAfterStep'],
  ] as const;
  for (const [hook, flag] of hooks) if (hookPresent(scope, at(hook), o[hook])) entry[flag] = true;
  const results = testResultPatterns(scope, at('testResults'), o['testResults']);
  if (results !== undefined) entry.testResults = results;
  if (dynamic) {
    if (!isFunction(o['generate'])) scope.fail(CompileErrorCode.invalidDefinition, at('generate'), 'a dynamic job needs a generate function');
    if (o['matrix'] !== undefined) scope.fail(CompileErrorCode.invalidDefinition, at('matrix'), 'a dynamic job cannot have a matrix: generate the jobs instead');
    entry.dynamic = true;
    entry.generatorRef = childPath(path, 'generate');
    return entry;
  }
  if (o['generate'] !== undefined) scope.fail(CompileErrorCode.invalidDefinition, at('generate'), 'only dynamicJobs(...) takes a generate function');
  const steps = Array.isArray(value['steps']) ? (value['steps'] as unknown[]) : scope.fail(CompileErrorCode.invalidStep, childPath(path, 'steps'), 'must be a list of steps');
  const seen = new Map<string, number>();
  entry.steps = steps.map((item, index) => {
    const stepPath = childPath(childPath(path, 'steps'), index);
    const step = stepEntry(scope, stepPath, item);
    const earlier = seen.get(step.name);
    if (earlier !== undefined) {
      scope.fail(CompileErrorCode.duplicateStep, stepPath, `step name ${JSON.stringify(step.name)} is already used by steps[${earlier}] of job ${JSON.stringify(name)}`);
    }
    seen.set(step.name, index);
    return step;
  });
  return entry;
}

/** Job definitions keyed by lock name, with their definition path. */
function listJobs(scope: CompileScope, value: unknown): { name: string; path: string; job: Record<string, unknown> }[] {
  const isJobValue = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'svc.job';
  if (Array.isArray(value)) {
    return value.map((job: unknown, index) => {
      const path = childPath('jobs', index);
      if (!isJobValue(job)) scope.fail(CompileErrorCode.invalidDefinition, path, 'must be built with job(...) or dynamicJobs(...)');
      const name = (job['options'] as { name?: unknown } | undefined)?.name;
      if (typeof name !== 'string') scope.fail(CompileErrorCode.invalidName, childPath(path, 'name'), 'jobs given as an array need a name');
      return { name, path, job };
    });
  }
  if (!isPlainObject(value)) scope.fail(CompileErrorCode.invalidDefinition, 'jobs', 'must be a record of jobs or an array of named jobs');
  return Object.entries(value).map(([key, job]) => {
    const path = childPath('jobs', key);
    if (!isJobValue(job)) scope.fail(CompileErrorCode.invalidDefinition, path, 'must be built with job(...) or dynamicJobs(...)');
    const name = (job['options'] as { name?: unknown } | undefined)?.name;
    if (name !== undefined && name !== key) scope.fail(CompileErrorCode.invalidName, childPath(path, 'name'), `differs from its key ${JSON.stringify(key)}: in the record form the key is the name`);
    return { name: key, path, job };
  });
}

/** `needs` must name existing jobs and form no cycle; the cycle is named in the error. */
function checkNeeds(scope: CompileScope, jobs: readonly LockJob[], paths: ReadonlyMap<string, string>): void {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  for (const job of jobs) {
    for (const need of job.needs) {
      if (!byName.has(need)) {
        const known = [...byName.keys()].sort().join(', ');
        scope.fail(CompileErrorCode.unknownNeed, `${paths.get(job.name)}.options.needs`, `job ${JSON.stringify(job.name)} needs ${JSON.stringify(need)}, which is not a job of this workflow (jobs: ${known})`);
      }
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string): void => {
    state.set(name, 'visiting');
    stack.push(name);
    for (const need of byName.get(name)!.needs) {
      const s = state.get(need);
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(need)), need];
        scope.fail(CompileErrorCode.needsCycle, `${paths.get(name)}.options.needs`, `needs form a cycle: ${cycle.join(' → ')}`);
      }
      if (s === undefined) visit(need);
    }
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...byName.keys()].sort()) if (!state.has(name)) visit(name);
}

/** All jobs of a workflow → lock job entries sorted by name. */
export function jobEntries(scope: CompileScope, value: unknown): LockJob[] {
  const listed = listJobs(scope, value);
  const seen = new Map<string, string>();
  const paths = new Map<string, string>();
  const entries = listed.map(({ name, path, job }) => {
    if (!JOB_NAME.test(name)) scope.fail(CompileErrorCode.invalidName, path, `${JSON.stringify(name)} is not a valid job name (letters, digits, _ . -; at most 100)`);
    const folded = name.toLowerCase();
    const earlier = seen.get(folded);
    if (earlier !== undefined) scope.fail(CompileErrorCode.duplicateJob, path, `job name ${JSON.stringify(name)} is already used at ${earlier} (job names are compared ignoring case)`);
    seen.set(folded, path);
    paths.set(name, path);
    return jobEntry(scope, path, name, job);
  });
  checkNeeds(scope, entries, paths);
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
