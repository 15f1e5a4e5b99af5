// Local copy of the compiler schema version (spec: Versioning 2) until `schemas/lock.ts`
// exports COMPILE_SCHEMA_VERSION; then this file should re-export that one instead.
// Bumping it invalidates every source cache entry, so bump it whenever a hashing rule changes.
export const COMPILE_SCHEMA_VERSION = 7;
