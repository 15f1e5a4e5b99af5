import t from 'tap';
import { githubEventDetails } from '../../../workflow/matching/event-details.ts';
import { pushPayload } from '../../fixtures/github-payloads.ts';
import { reviewPayload, statusPayload, workflowRunPayload } from '../../fixtures/more-payloads.ts';

t.test('facts read from GitHub-shaped payloads', async (t) => {
  t.same(githubEventDetails('pull_request_review', reviewPayload({ state: 'APPROVED' })), { reviewState: 'approved' });
  t.same(githubEventDetails('status', statusPayload({ state: 'error', context: 'ci/x' })), { statusState: 'error', statusContext: 'ci/x' });
  t.same(githubEventDetails('workflow_run', workflowRunPayload({ conclusion: null, headBranch: 'dev' })), {
    workflowRun: { name: 'build', conclusion: null, headBranch: 'dev' },
  });
  t.same(githubEventDetails('push', pushPayload()), {});
});

t.test('hostile or broken payloads read as absent facts', async (t) => {
  t.same(githubEventDetails('status', null), {});
  t.same(githubEventDetails('status', [1, 2]), {});
  t.same(githubEventDetails('status', { state: 5, context: { x: 1 } }), { statusState: null, statusContext: null });
  t.same(githubEventDetails('pull_request_review', { review: 'approved' }), { reviewState: null });
  t.same(githubEventDetails('workflow_run', { workflow_run: 'x' }), { workflowRun: null });
  t.same(githubEventDetails('workflow_run', { workflow_run: {}, workflow: { name: 'from-workflow' } }), {
    workflowRun: { name: 'from-workflow', conclusion: null, headBranch: null },
  });
});
