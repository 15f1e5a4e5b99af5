// Event facts some filters need that the normalized event does not carry (review state,
// commit status state and context, workflow run name/conclusion/branch), read from a
// GitHub-shaped payload. Defensive like the normalizer: a wrong type reads as absent, and an
// absent fact makes its filter indeterminate rather than guessed.
import type { EventDetails } from './types.ts';

type Json = Record<string, unknown>;

function obj(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}
function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function githubEventDetails(providerEvent: string, payload: unknown): EventDetails {
  const body = obj(payload);
  if (!body) return {};
  switch (providerEvent) {
    case 'pull_request_review': {
      // Webhooks send lower case; the REST API upper case. Filters are lower case.
      const state = str(obj(body['review'])?.['state']);
      return { reviewState: state === null ? null : state.toLowerCase() };
    }
    case 'status':
      return { statusState: str(body['state']), statusContext: str(body['context']) };
    case 'workflow_run': {
      const run = obj(body['workflow_run']);
      if (!run) return { workflowRun: null };
      return {
        workflowRun: {
          name: str(run['name']) ?? str(obj(body['workflow'])?.['name']),
          conclusion: str(run['conclusion']),
          headBranch: str(run['head_branch']),
        },
      };
    }
    default:
      return {};
  }
}
