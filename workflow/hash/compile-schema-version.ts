// The compiler schema version (spec: Versioning 2) lives with the lock schema; re-exported here
// so the hashing modules have one import. Bump it whenever a hashing rule in this folder changes:
// that invalidates every source cache entry, as it must.
export { COMPILE_SCHEMA_VERSION } from '../../schemas/lock.ts';
