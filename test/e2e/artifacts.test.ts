// Run artifacts end to end on filesystem storage (the default), REAL processes: see
// test/fixtures/artifacts-e2e.ts for the flow (job A uploads, job B downloads and checks the
// digest, hostile names and paths refused, svc runs artifacts|download through the relay, a
// tampered stored object refused by the agent and the CLI, a workflowComplete follow-up reading
// the upstream run's artifact).
import { join } from 'node:path';
import t from 'tap';
import { FilesystemStorage } from '../../plugins/storage/filesystem/index.ts';
import { artifactsFlow } from '../fixtures/artifacts-e2e.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack } from '../fixtures/jobs-stack.ts';

// Two database variants of a whole stack each; generous for a machine whose cores are busy.
t.setTimeout(2_400_000);

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  // The orchestrator's storage root (SVC_DATA_DIR/storage), seen directly by the test.
  const bucket = new FilesystemStorage({ root: join(stack.root, 'orch', 'storage') });
  await artifactsFlow(t, stack, bucket);
});
