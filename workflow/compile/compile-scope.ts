// Compile errors name the workflow file and the field path inside the definition
// (`jobs.build.steps[2].timeout`), so a person can go straight to the mistake.
import { InputError } from '../../core/errors.ts';

export const CompileErrorCode = {
  invalidDefinition: 'SVC_ERR_COMPILE_INVALID_DEFINITION',
  invalidName: 'SVC_ERR_COMPILE_INVALID_NAME',
  invalidValue: 'SVC_ERR_COMPILE_INVALID_VALUE',
  invalidTrigger: 'SVC_ERR_COMPILE_INVALID_TRIGGER',
  invalidCron: 'SVC_ERR_COMPILE_INVALID_CRON',
  invalidGlob: 'SVC_ERR_COMPILE_INVALID_GLOB',
  invalidRegex: 'SVC_ERR_COMPILE_INVALID_REGEX',
  invalidLabel: 'SVC_ERR_COMPILE_INVALID_LABEL',
  invalidApproval: 'SVC_ERR_COMPILE_INVALID_APPROVAL',
  invalidMatrix: 'SVC_ERR_COMPILE_INVALID_MATRIX',
  invalidSecretRef: 'SVC_ERR_COMPILE_INVALID_SECRET_REF',
  invalidRegistry: 'SVC_ERR_COMPILE_INVALID_REGISTRY',
  invalidHook: 'SVC_ERR_COMPILE_INVALID_HOOK',
  invalidStep: 'SVC_ERR_COMPILE_INVALID_STEP',
  invalidRetry: 'SVC_ERR_COMPILE_RETRY',
  duplicateWorkflow: 'SVC_ERR_COMPILE_DUPLICATE_WORKFLOW',
  duplicateJob: 'SVC_ERR_COMPILE_DUPLICATE_JOB',
  duplicateStep: 'SVC_ERR_COMPILE_DUPLICATE_STEP',
  unknownNeed: 'SVC_ERR_COMPILE_UNKNOWN_NEED',
  needsCycle: 'SVC_ERR_COMPILE_NEEDS_CYCLE',
  undeclaredContext: 'SVC_ERR_COMPILE_UNDECLARED_CONTEXT',
  unhonouredFeature: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE',
  testResults: 'SVC_ERR_COMPILE_TEST_RESULTS',
} as const;
export type CompileErrorCode = (typeof CompileErrorCode)[keyof typeof CompileErrorCode];

/** The workflow being compiled: every error it raises names the file and the field path. */
export class CompileScope {
  readonly file: string;
  readonly workflow: string | undefined;

  constructor(file: string, workflow?: string) {
    this.file = file;
    this.workflow = workflow;
  }

  withWorkflow(name: string): CompileScope {
    return new CompileScope(this.file, name);
  }

  fail(code: CompileErrorCode, path: string, message: string, cause?: unknown): never {
    const where = this.workflow === undefined ? this.file : `${this.file} (workflow ${JSON.stringify(this.workflow)})`;
    const at = path === '' ? '' : ` at ${path}`;
    throw new InputError(code, `${where}${at}: ${message}`, {
      cause,
      details: { file: this.file, workflow: this.workflow, path },
    });
  }
}

/** `jobs` + `build` → `jobs.build`; `jobs` + `a-b` → `jobs["a-b"]`; `steps` + 2 → `steps[2]`. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}
