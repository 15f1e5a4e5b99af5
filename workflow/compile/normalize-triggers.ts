// Triggers → lock triggers: every default written out, set-like lists sorted, pattern lists
// validated and kept in declared order, then the triggers themselves sorted so the lock does not
// depend on the order they were declared in.
import type { LockCommitMessage, LockDispatchInput, LockRequirement, LockTrigger } from '../../schemas/lock.ts';
import { TRIGGER_TYPES, type TriggerType } from '../../schemas/event.ts';
import { canonicalStringify } from '../lock/canonical-json.ts';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';
import {
  arrayOf,
  cronExpression,
  enumSet,
  expectObject,
  globList,
  isPlainObject,
  nameSet,
  nonEmptyString,
  optionalBoolean,
  optionalInteger,
  optionalString,
  regexSource,
  relativeGlob,
  relativeGlobList,
  timezone,
} from './validate-fields.ts';

const PR_ACTIONS = [
  'assigned', 'closed', 'converted_to_draft', 'edited', 'labeled', 'opened', 'ready_for_review', 'reopened',
  'review_request_removed', 'review_requested', 'synchronize', 'unassigned', 'unlabeled',
] as const;
const COMMENT_ACTIONS = ['created', 'deleted', 'edited'] as const;
const RELEASE_ACTIONS = ['created', 'deleted', 'edited', 'prereleased', 'published', 'released', 'unpublished'] as const;
const REVIEW_ACTIONS = ['dismissed', 'edited', 'submitted'] as const;
const REVIEW_STATES = ['approved', 'changes_requested', 'commented'] as const;
const REF_TYPES = ['branch', 'tag'] as const;
const COMMIT_STATES = ['error', 'failure', 'pending', 'success'] as const;
const WORKFLOW_RUN_ACTIONS = ['completed', 'in_progress', 'requested'] as const;
const WORKFLOW_RUN_CONCLUSIONS = ['action_required', 'cancelled', 'failure', 'neutral', 'skipped', 'success', 'timed_out'] as const;
const STAR_ACTIONS = ['created', 'deleted'] as const;
const WATCH_ACTIONS = ['started'] as const;
const RUN_STATUSES = ['cancelled', 'failed', 'success'] as const;
const LIFECYCLE_EVENTS = [
  'installation.created', 'installation.deleted', 'registration.updated', 'repository.archived', 'repository.created', 'repository.deleted',
] as const;

const WORKFLOW_NAME = /^[^\s:@][^:@\u0000-\u001f]{0,99}$/;
const JOB_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const INPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,99}$/;
const BRANCH_NAME = /^[^\s~^:?*[\\]+$/;

/** `owner/repo` patterns: their presence makes the workflow organization-wide. */
function repositories(scope: CompileScope, path: string, value: unknown): string[] {
  const items = globList(scope, path, value);
  for (const [index, item] of items.entries()) {
    const body = item.startsWith('!') ? item.slice(1) : item;
    if (!body.includes('/')) scope.fail(CompileErrorCode.invalidGlob, childPath(path, index), `${JSON.stringify(item)} must be an owner/repo pattern`);
  }
  return items;
}

function commitMessage(scope: CompileScope, path: string, value: unknown): LockCommitMessage | undefined {
  if (value === undefined) return undefined;
  if (value instanceof RegExp) return { kind: 'regex', ...regexSource(scope, path, value) };
  if (typeof value !== 'string' || value === '') scope.fail(CompileErrorCode.invalidTrigger, path, 'must be a glob string or a RegExp');
  // A message glob spans lines and slashes, so only check that it compiles.
  return { kind: 'glob', pattern: globList(scope, path, [value])[0]! };
}

function requirements(scope: CompileScope, path: string, value: unknown): LockRequirement[] {
  return arrayOf(scope, path, value, (item, itemPath) => {
    const req = expectObject(scope, itemPath, item, ['file', 'exists', 'contains']);
    const file = relativeGlob(scope, childPath(itemPath, 'file'), req['file']);
    if (file.startsWith('!') || /[*?[\]{}]/.test(file)) scope.fail(CompileErrorCode.invalidTrigger, childPath(itemPath, 'file'), 'must be a plain file path, not a glob');
    const exists = optionalBoolean(scope, childPath(itemPath, 'exists'), req['exists']);
    const contains = optionalString(scope, childPath(itemPath, 'contains'), req['contains']);
    if (contains !== undefined) {
      if (contains === '') scope.fail(CompileErrorCode.invalidTrigger, childPath(itemPath, 'contains'), 'must not be empty');
      if (exists === false) scope.fail(CompileErrorCode.invalidTrigger, itemPath, 'cannot require text in a file that must be absent');
      return { type: 'file-contains', path: file, text: contains };
    }
    return exists === false ? { type: 'file-absent', path: file } : { type: 'file-exists', path: file };
  });
}

function dispatchInputs(scope: CompileScope, path: string, value: unknown): Record<string, LockDispatchInput> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) scope.fail(CompileErrorCode.invalidTrigger, path, 'must be an object of input declarations');
  const out: Record<string, LockDispatchInput> = {};
  for (const [name, raw] of Object.entries(value)) {
    const inputPath = childPath(path, name);
    if (!INPUT_NAME.test(name)) scope.fail(CompileErrorCode.invalidName, inputPath, `${JSON.stringify(name)} is not a valid input name`);
    const input = expectObject(scope, inputPath, raw, ['type', 'description', 'required', 'default', 'options']);
    const type = input['type'];
    if (type !== 'string' && type !== 'number' && type !== 'boolean' && type !== 'choice') {
      scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'type'), 'must be string, number, boolean or choice');
    }
    const entry: LockDispatchInput = { type, required: optionalBoolean(scope, childPath(inputPath, 'required'), input['required']) ?? false };
    const description = optionalString(scope, childPath(inputPath, 'description'), input['description']);
    if (description !== undefined) entry.description = description;
    if (type === 'choice') {
      const options = arrayOf(scope, childPath(inputPath, 'options'), input['options'], (o, p) => nonEmptyString(scope, p, o));
      if (options.length === 0) scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'options'), 'a choice input needs at least one option');
      if (new Set(options).size !== options.length) scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'options'), 'has duplicate options');
      entry.options = options;
    } else if (input['options'] !== undefined) {
      scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'options'), 'only a choice input has options');
    }
    const fallback = input['default'];
    if (fallback !== undefined) {
      const expected = type === 'choice' ? 'string' : type;
      if (typeof fallback !== expected) scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'default'), `must be a ${expected}`);
      if (type === 'choice' && !entry.options!.includes(fallback as string)) {
        scope.fail(CompileErrorCode.invalidTrigger, childPath(inputPath, 'default'), 'must be one of the options');
      }
      entry.default = fallback as string | number | boolean;
    }
    out[name] = entry;
  }
  return out;
}

function names(scope: CompileScope, path: string, value: unknown, shape: RegExp, what: string): string[] {
  return nameSet(scope, path, value, shape, what);
}

/** One trigger object (a trigger function result) → its lock form. */
export function normalizeTrigger(scope: CompileScope, path: string, trigger: unknown): LockTrigger {
  const t = expectObject(scope, path, trigger, ['kind', 'type', 'options']);
  if (t['kind'] !== 'svc.trigger' || !(TRIGGER_TYPES as readonly unknown[]).includes(t['type'])) {
    scope.fail(CompileErrorCode.invalidTrigger, path, `is not a trigger (use push(), pr(), schedule(), … ; known types: ${TRIGGER_TYPES.join(', ')})`);
  }
  const type = t['type'] as TriggerType;
  const at = (key: string) => childPath(childPath(path, 'options'), key);
  const allowed = (keys: string[]) => expectObject(scope, childPath(path, 'options'), t['options'] ?? {}, keys);
  switch (type) {
    case 'push': {
      const o = allowed(['branches', 'paths', 'commitMessage', 'repositories', 'requires']);
      const out: LockTrigger = {
        type,
        branches: globList(scope, at('branches'), o['branches']),
        paths: relativeGlobList(scope, at('paths'), o['paths']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
        requires: requirements(scope, at('requires'), o['requires']),
      };
      const message = commitMessage(scope, at('commitMessage'), o['commitMessage']);
      return message === undefined ? out : { ...out, commitMessage: message };
    }
    case 'pr': {
      const o = allowed(['actions', 'branches', 'paths', 'commitMessage', 'repositories', 'requires']);
      const out: LockTrigger = {
        type,
        actions: enumSet(scope, at('actions'), o['actions'], PR_ACTIONS, ['opened', 'reopened', 'synchronize']),
        branches: globList(scope, at('branches'), o['branches']),
        paths: relativeGlobList(scope, at('paths'), o['paths']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
        requires: requirements(scope, at('requires'), o['requires']),
      };
      const message = commitMessage(scope, at('commitMessage'), o['commitMessage']);
      return message === undefined ? out : { ...out, commitMessage: message };
    }
    case 'comment': {
      const o = allowed(['actions', 'repositories']);
      return { type, actions: enumSet(scope, at('actions'), o['actions'], COMMENT_ACTIONS, ['created']), repositories: repositories(scope, at('repositories'), o['repositories']) };
    }
    case 'tag': {
      const o = allowed(['tags', 'repositories', 'requires']);
      return {
        type,
        tags: globList(scope, at('tags'), o['tags']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
        requires: requirements(scope, at('requires'), o['requires']),
      };
    }
    case 'release': {
      const o = allowed(['actions', 'tags', 'repositories']);
      return {
        type,
        actions: enumSet(scope, at('actions'), o['actions'], RELEASE_ACTIONS, ['published']),
        tags: globList(scope, at('tags'), o['tags']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'review': {
      const o = allowed(['actions', 'states', 'branches', 'repositories']);
      return {
        type,
        actions: enumSet(scope, at('actions'), o['actions'], REVIEW_ACTIONS, ['submitted']),
        states: enumSet(scope, at('states'), o['states'], REVIEW_STATES, []),
        branches: globList(scope, at('branches'), o['branches']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'review_comment': {
      const o = allowed(['actions', 'branches', 'repositories']);
      return {
        type,
        actions: enumSet(scope, at('actions'), o['actions'], COMMENT_ACTIONS, ['created']),
        branches: globList(scope, at('branches'), o['branches']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'dispatch': {
      const o = allowed(['inputs', 'branches']);
      return { type, inputs: dispatchInputs(scope, at('inputs'), o['inputs']), branches: globList(scope, at('branches'), o['branches']) };
    }
    case 'create':
    case 'delete': {
      const o = allowed(['refTypes', 'branches', 'tags', 'repositories']);
      return {
        type,
        refTypes: enumSet(scope, at('refTypes'), o['refTypes'], REF_TYPES, ['branch', 'tag']),
        branches: globList(scope, at('branches'), o['branches']),
        tags: globList(scope, at('tags'), o['tags']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'status': {
      const o = allowed(['states', 'contexts', 'repositories']);
      return {
        type,
        states: enumSet(scope, at('states'), o['states'], COMMIT_STATES, []),
        contexts: globList(scope, at('contexts'), o['contexts']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'workflow_run': {
      const o = allowed(['workflows', 'actions', 'conclusions', 'branches', 'repositories']);
      const workflows = names(scope, at('workflows'), o['workflows'], WORKFLOW_NAME, 'workflow name');
      if (workflows.length === 0) scope.fail(CompileErrorCode.invalidTrigger, at('workflows'), 'must name at least one workflow');
      return {
        type,
        workflows,
        actions: enumSet(scope, at('actions'), o['actions'], WORKFLOW_RUN_ACTIONS, ['completed']),
        conclusions: enumSet(scope, at('conclusions'), o['conclusions'], WORKFLOW_RUN_CONCLUSIONS, []),
        branches: globList(scope, at('branches'), o['branches']),
        repositories: repositories(scope, at('repositories'), o['repositories']),
      };
    }
    case 'fork': {
      const o = allowed(['repositories']);
      return { type, repositories: repositories(scope, at('repositories'), o['repositories']) };
    }
    case 'star': {
      const o = allowed(['actions', 'repositories']);
      return { type, actions: enumSet(scope, at('actions'), o['actions'], STAR_ACTIONS, ['created']), repositories: repositories(scope, at('repositories'), o['repositories']) };
    }
    case 'watch': {
      const o = allowed(['actions', 'repositories']);
      return { type, actions: enumSet(scope, at('actions'), o['actions'], WATCH_ACTIONS, ['started']), repositories: repositories(scope, at('repositories'), o['repositories']) };
    }
    case 'schedule': {
      const o = allowed(['cron', 'timezone', 'branch']);
      const out: LockTrigger = { type, cron: cronExpression(scope, at('cron'), o['cron']), timezone: timezone(scope, at('timezone'), o['timezone']) };
      if (o['branch'] === undefined) return out;
      if (typeof o['branch'] !== 'string' || !BRANCH_NAME.test(o['branch'])) scope.fail(CompileErrorCode.invalidTrigger, at('branch'), 'must be a branch name');
      return { ...out, branch: o['branch'] };
    }
    case 'webhook': {
      const o = allowed(['events']);
      const events = names(scope, at('events'), o['events'], EVENT_NAME, 'event name');
      if (events.length === 0) scope.fail(CompileErrorCode.invalidTrigger, at('events'), 'must list at least one event name');
      return { type, events };
    }
    case 'event': {
      const o = allowed(['name']);
      if (typeof o['name'] !== 'string' || !EVENT_NAME.test(o['name'])) scope.fail(CompileErrorCode.invalidName, at('name'), 'must be an event name (letters, digits, . _ : -)');
      return { type, name: o['name'] };
    }
    case 'workflow_complete': {
      const o = allowed(['workflows', 'statuses']);
      return {
        type,
        workflows: names(scope, at('workflows'), o['workflows'], WORKFLOW_NAME, 'workflow name'),
        statuses: enumSet(scope, at('statuses'), o['statuses'], RUN_STATUSES, []),
      };
    }
    case 'job_complete': {
      const o = allowed(['workflows', 'jobs', 'statuses']);
      return {
        type,
        workflows: names(scope, at('workflows'), o['workflows'], WORKFLOW_NAME, 'workflow name'),
        jobs: names(scope, at('jobs'), o['jobs'], JOB_NAME, 'job name'),
        statuses: enumSet(scope, at('statuses'), o['statuses'], RUN_STATUSES, []),
      };
    }
    case 'lifecycle': {
      const o = allowed(['events']);
      return { type, events: enumSet(scope, at('events'), o['events'], LIFECYCLE_EVENTS, []) };
    }
    case 'workflows_failed_batch': {
      const o = allowed(['workflows', 'threshold', 'windowSeconds']);
      return {
        type,
        workflows: names(scope, at('workflows'), o['workflows'], WORKFLOW_NAME, 'workflow name'),
        threshold: optionalInteger(scope, at('threshold'), o['threshold'], { min: 1, max: 10_000 }) ?? 1,
        windowSeconds: optionalInteger(scope, at('windowSeconds'), o['windowSeconds'], { min: 60, max: 30 * 86_400, unit: 'seconds' }) ?? 3600,
      };
    }
  }
}

/** `on` → sorted, de-duplicated lock triggers. */
export function normalizeTriggers(scope: CompileScope, path: string, on: unknown): LockTrigger[] {
  const list = Array.isArray(on) ? on : on === undefined ? [] : [on];
  if (list.length === 0) scope.fail(CompileErrorCode.invalidTrigger, path, 'needs at least one trigger');
  const keyed = new Map<string, LockTrigger>();
  list.forEach((trigger, index) => {
    const lock = normalizeTrigger(scope, Array.isArray(on) ? childPath(path, index) : path, trigger);
    keyed.set(canonicalStringify(lock), lock);
  });
  const order = (t: LockTrigger) => TRIGGER_TYPES.indexOf(t.type);
  return [...keyed.entries()]
    .sort(([ka, a], [kb, b]) => order(a) - order(b) || (ka < kb ? -1 : ka > kb ? 1 : 0))
    .map(([, trigger]) => trigger);
}

export { JOB_NAME, WORKFLOW_NAME };
