// Personal access tokens of the relay (developer CLI authentication).
export { createPat, listPats, revokePat, patForToken, hashPat, checkExpiryDays, PAT_PREFIX, MAX_PAT_EXPIRY_DAYS, type CreatedPat, type PatSummary, type PatIdentity } from './store.ts';
