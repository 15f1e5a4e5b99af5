// Personal access tokens of the relay (developer CLI authentication).
export { createPat, listPats, revokePat, patForToken, hashPat, PAT_PREFIX, type CreatedPat, type PatSummary, type PatIdentity } from './store.ts';
