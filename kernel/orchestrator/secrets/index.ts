// Secret contexts (docs/secrets.md): named groups of sealed secrets with protection rules,
// released into `jobConfig.secrets` at dispatch when the run passes them.
//
// Public API:
//   createContext(pool, input) / getContext / listContexts / bindContext(pool, name, { repositories, orgs })
//   protectContext(pool, name, { requiredReviewers, waitTimerSeconds, concurrencyLimit }) (run-control gates enforce them)
//   setSecret(pool, masterKey, context, key, value) → { replaced }; listSecretKeys(pool, context)
//   secretsSealedStore: the values under the master key (kernel/orchestrator/sealed-stores.ts)
//   releaseJobSecrets(pool, masterKeys, input, logger) → flat secrets | undefined; throws SecretContextDeniedError
//   checkContextRules(context, run) → verdict (pure)
export { secretsSealedStore } from './sealed-store.ts';
export {
  createContext,
  getContext,
  listContexts,
  bindContext,
  protectContext,
  setSecret,
  listSecretKeys,
  openContextSecrets,
  secretAd,
  checkContextName,
  checkSecretKey,
  checkMinTrust,
  SecretOpenError,
  MAX_SECRET_BYTES,
  type SecretContext,
  type CreateContextInput,
  type BindInput,
  type ProtectionInput,
  type SecretKeyInfo,
  type MinTrust,
} from './store.ts';
export { checkContextRules, type RunFacts, type RuleVerdict, type RuleName } from './rules.ts';
export { releaseJobSecrets, declaredContexts, flattenSecrets, SecretContextDeniedError, type JobSecretsInput } from './release.ts';
