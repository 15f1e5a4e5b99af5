// `svc/sdk`: the authoring API that `.svc/workflows/*.ts` and `.svc/tests/*.ts` import.
export { Type, type Static } from 'typebox';
export * from './triggers.ts';
export { deleteRef as delete } from './triggers.ts';
export type * from './context.ts';
export type * from './approval.ts';
export { team, role } from './approval.ts';
export { rule, skip, isRule, type Rule } from './rules.ts';
export {
  step,
  steps,
  isStep,
  isStepChain,
  type DriftCheck,
  type Step,
  type StepChain,
  type StepFn,
  type StepOptions,
  type StepOptionsWithOutputs,
} from './step.ts';
export {
  job,
  dynamicJobs,
  isJob,
  type CheckoutOptions,
  type Concurrency,
  type ContainerOptions,
  type DynamicJobsOptions,
  type Job,
  type JobHooks,
  type JobOptions,
  type JobSteps,
  type MatrixDefinition,
  type MatrixGenerator,
  type MatrixOf,
  type RetryCondition,
  type RetryPolicy,
  type Routing,
} from './job.ts';
export {
  workflow,
  isWorkflow,
  type CheckedJobs,
  type WorkflowJobs,
  type QualifiedSecret,
  type RegistryDeclaration,
  type Workflow,
  type WorkflowOptions,
} from './workflow.ts';
export { fixture, isFixture, resolveFixture, type Fixture, type FixtureOptions, type FixturePullRequest, type FixtureSource } from './fixture.ts';
export { createShell, ShellCommandError, type ShellBase } from './shell.ts';
export {
  createTestStepContext,
  type EmitCall,
  type TestSecrets,
  type TestStepContext,
  type TestStepContextOptions,
} from './test-context.ts';
export { resolveDefinitionRef } from './resolve-ref.ts';
