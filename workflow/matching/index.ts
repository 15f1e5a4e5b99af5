// Trigger matching: a normalized event against a lock file or the orchestrator's registrations.
// Pure and synchronous except evaluateRequirements, whose only I/O is the reader passed in.
export { matchLock, explainWorkflow, matchSchedule, scheduleFireName, lockUsesPathFilters, workflowsNeedChangedFiles, lockMessageRegexes } from './match-lock.ts';
export { evaluateRequirements, type ReadFile, type RequirementResult } from './requirements.ts';
export {
  buildRegistrationIndex,
  matchRegistrations,
  registrationMessageRegexes,
  type Registration,
  type RegistrationIndex,
  type RegistrationMatch,
  type RegistrationNonMatch,
} from './registrations.ts';
export { githubEventDetails } from './event-details.ts';
export { webhookEventName } from './trigger.ts';
export { select, compilePatternList, compileCommitMessage, type MessageRegex, type PatternKind, type PatternList, type Selection } from './patterns.ts';
export type {
  EventDetails,
  FilterName,
  FilterVerdict,
  InternalEventFields,
  LockMatchResult,
  MatchOptions,
  OrgWidePolicy,
  RegexResult,
  Verdict,
  WorkflowMatch,
  WorkflowNonMatch,
} from './types.ts';
