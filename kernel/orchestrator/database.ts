// Where the orchestrator's schema lives: its migrations folder and their bookkeeping table. A module
// of its own so that what only needs the database (the admin CLI's commands, debug routes, benches)
// does not load the whole orchestrator to learn two constants: each svc-admin invocation pays for
// every module it imports, and importing app.ts costs over a thousand.
import { fileURLToPath } from 'node:url';

export const ORCHESTRATOR_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
export const ORCHESTRATOR_MIGRATIONS_TABLE = 'svc_migrations';
