// Relay: webhook ingress, orchestrator link, dashboard, orgs and tokens.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const RELAY_ERROR_CODES = {
  // RELAY
  SVC_ERR_RELAY_ATTESTATION_ID_INVALID: { kind: 'input', message: '"{attestationId}" is not an attestation id (a UUID)' },
  SVC_ERR_RELAY_AUDIT_INVALID: { kind: 'input', message: 'relay audit record refused: {problem}' },
  SVC_ERR_RELAY_AUTH_INVALID: {
    kind: 'authentication',
    message: 'the token is not valid (revoked, expired, rotated or mistyped); log in again ("svc login") or ask an operator for a new one ("svc-admin relay pat create")',
  },
  SVC_ERR_RELAY_AUTH_MISSING: {
    kind: 'authentication',
    message: 'send a personal access token as "Authorization: Bearer <token>" (svc login --token <PAT>)',
  },
  SVC_ERR_RELAY_AUTH_WRONG_ORG: {
    kind: 'not_allowed',
    message: 'this token belongs to org {tokenOrg}, not {orgId}; use "svc org use {tokenOrg}" or a token of {orgId}',
  },
  SVC_ERR_RELAY_BAD_ANSWER: { kind: 'unavailable', message: 'the orchestrator answered without {what}' },
  SVC_ERR_RELAY_CROSS_ORIGIN: { kind: 'not_allowed', message: "this form must be sent from the relay's own pages ({origin}); reload the page and try again" },
  SVC_ERR_RELAY_CSRF_INVALID: { kind: 'not_allowed', message: 'the form is missing its CSRF token or it does not match this session; reload the page and try again' },
  SVC_ERR_RELAY_DEVICE_ACCESS_DENIED: { kind: 'not_allowed', message: 'access_denied: the login was denied in the browser' },
  SVC_ERR_RELAY_DEVICE_AUTHORIZATION_PENDING: { kind: 'conflict', message: 'authorization_pending: the code has not been approved yet; keep polling' },
  SVC_ERR_RELAY_DEVICE_CODES_FULL: { kind: 'rate_limited', message: '{max} device logins are already waiting for approval; retry in a minute' },
  SVC_ERR_RELAY_DEVICE_CODE_INVALID: { kind: 'input', message: 'invalid_grant: unknown or already used device code; run "svc login" again' },
  SVC_ERR_RELAY_DEVICE_DECISION_INVALID: { kind: 'input', message: 'press Approve or Deny (decision must be "approve" or "deny")' },
  SVC_ERR_RELAY_DEVICE_EXPIRED: { kind: 'input', message: 'expired_token: the code expired before it was approved; run "svc login" again' },
  SVC_ERR_RELAY_DEVICE_RATE_LIMITED: { kind: 'rate_limited', message: 'too many {what} from this address; retry in {seconds} s' },
  SVC_ERR_RELAY_DEVICE_REQUEST_INVALID: { kind: 'input', message: 'invalid_request: send { "device_code": "…", "grant_type": "urn:ietf:params:oauth:grant-type:device_code" }' },
  SVC_ERR_RELAY_DEVICE_SLOW_DOWN: { kind: 'input', message: 'slow_down: polling too fast; wait the returned interval between polls' },
  SVC_ERR_RELAY_DEVICE_USER_CODE_INVALID: {
    kind: 'not_found',
    message: 'that code is not waiting for approval: it is mistyped, already used, or expired (codes live 10 minutes); run "svc login" again for a new one',
  },
  SVC_ERR_RELAY_LINK_CLOSED: { kind: 'unavailable', message: 'the relay link is closed' },
  SVC_ERR_RELAY_LINK_TIMEOUT: { kind: 'unavailable', message: 'not connected to the relay at {platformUrl} within {timeoutMs} ms' },
  SVC_ERR_RELAY_NO_ORCHESTRATOR: {
    kind: 'unavailable',
    message: 'no orchestrator of org {orgId} is connected to the relay; start one (check its SVC_PLATFORM_URL and SVC_PLATFORM_TOKEN) and retry',
  },
  SVC_ERR_RELAY_ORCHESTRATOR_GONE: { kind: 'unavailable', message: 'the orchestrator {orchestratorId} disconnected before it answered; retry' },
  SVC_ERR_RELAY_ORCHESTRATOR_TIMEOUT: {
    kind: 'unavailable',
    message: 'the orchestrator {orchestratorId} did not answer {type} within {timeoutMs} ms; retry shortly',
  },
  SVC_ERR_RELAY_ORG_EXISTS: { kind: 'conflict', message: 'org "{orgId}" already exists; use "relay org token rotate {orgId}" for a new token' },
  SVC_ERR_RELAY_ORG_ID_INVALID: {
    kind: 'input',
    message: 'org id "{orgId}" is not valid: use 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit',
  },
  SVC_ERR_RELAY_ORG_NOT_FOUND: { kind: 'not_found', message: 'org "{orgId}" does not exist; create it with "relay org create {orgId}"' },
  SVC_ERR_RELAY_PATS_NEED_USER: {
    kind: 'not_allowed',
    message: 'personal access tokens belong to a person: call with your own personal access token, not the org platform token',
  },
  SVC_ERR_RELAY_PAT_EXPIRY_INVALID: { kind: 'input', message: 'the expiry must be a whole number of days from 1 to {max}; got {days}' },
  SVC_ERR_RELAY_PAT_ID_INVALID: { kind: 'input', message: '"{id}" is not a token id (a UUID, as "relay pat list" prints it)' },
  SVC_ERR_RELAY_PAT_NAME_INVALID: { kind: 'input', message: 'the token name must be at most 200 characters without control characters' },
  SVC_ERR_RELAY_PAT_NOT_FOUND: { kind: 'not_found', message: 'no token {patId}; list them with "relay pat list"' },
  SVC_ERR_RELAY_PAT_USER_INVALID: {
    kind: 'input',
    message: 'the user name must be 1-100 printable ASCII characters, not starting or ending with a space',
  },
  SVC_ERR_RELAY_PERSON_INVALID: { kind: 'input', message: 'name a person by id (a UUID) or as <provider>:<login>' },
  SVC_ERR_RELAY_PERSON_NOT_FOUND: { kind: 'not_found', message: 'no person "{person}" has signed in at this relay; a person exists after their first sign-in through a provider' },
  SVC_ERR_RELAY_QUERY_INVALID: { kind: 'input', message: 'unknown query parameter(s): {unknown}; only "after" is accepted' },
  SVC_ERR_RELAY_REFRESH_INVALID: { kind: 'authentication', message: 'the refresh token is not valid (used, revoked or mistyped); sign in again with "svc login"' },
  SVC_ERR_RELAY_REFRESH_REFUSED: { kind: 'authentication', message: 'the identity provider {provider} no longer accepts {person}: {reason}; the token is revoked; sign in again with "svc login" once your account is active' },
  SVC_ERR_RELAY_ROLE_INVALID: { kind: 'input', message: '"{role}" is not a role; use one of viewer, developer, approver, admin' },
  SVC_ERR_RELAY_ROLE_REQUIRED: {
    kind: 'not_allowed',
    message: 'this needs the {role} role in org {orgId} ({action}); you have {roles}. Ask an admin of {orgId} for {role} (a group mapped to it, or "svc-admin relay role grant")',
  },
  SVC_ERR_RELAY_RUN_ID_INVALID: { kind: 'input', message: '"{runId}" is not a run id (a UUID)' },
  SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID: {
    kind: 'input',
    message: '"before" must be the "nextBefore" of the previous page (<time>,<run id>) or an ISO time such as 2026-01-31T12:00:00Z; got "{before}"',
  },
  SVC_ERR_RELAY_SCOPE_INVALID: { kind: 'input', message: '"{scope}" is not a token scope; scopes are role names: viewer, developer, approver, admin' },
  SVC_ERR_RELAY_SESSION_INVALID: {
    kind: 'authentication',
    message: 'the browser session has ended (signed out, expired, or its token was revoked); sign in again at /signin',
  },
  SVC_ERR_RELAY_SIGNIN_INVALID: {
    kind: 'authentication',
    message: 'that is not a valid personal access token (revoked, expired or mistyped); paste a "svcpat_…" token',
  },
  SVC_ERR_RELAY_SSO_CALLBACK_INVALID: { kind: 'authentication', message: 'the sign-in with {provider} could not be completed: {reason}; start again from /signin' },
  SVC_ERR_RELAY_SSO_CONFIG_INVALID: { kind: 'input', message: 'relay.sso.providers.{provider}: {reason}' },
  SVC_ERR_RELAY_SSO_NO_ROLE: { kind: 'not_allowed', message: '{person} signed in with {provider} but has no role in any org; ask an admin to grant one or to map one of your groups ({groups})' },
  SVC_ERR_RELAY_SSO_PROVIDER_UNKNOWN: { kind: 'not_found', message: 'no sign-in provider "{provider}" is configured; choose one on /signin' },
  SVC_ERR_RELAY_SSO_RATE_LIMITED: { kind: 'rate_limited', message: 'too many sign-ins started from this address; retry in {seconds} s' },
  SVC_ERR_RELAY_SSO_UNAVAILABLE: { kind: 'unavailable', message: 'the identity provider {provider} did not answer: {reason}; retry shortly' },
  SVC_ERR_RELAY_STOPPING: { kind: 'unavailable', message: 'the relay is stopping; retry shortly' },
  SVC_ERR_RELAY_TOKEN_INVALID: { kind: 'authentication', message: 'the platform token is not valid for any org (rotated or mistyped?)' },
  SVC_ERR_RELAY_TOKEN_MISSING: { kind: 'authentication', message: 'send the org platform token as "Authorization: Bearer <token>"' },
  SVC_ERR_RELAY_UNAVAILABLE: { kind: 'unavailable', message: 'the relay cannot check tokens right now; retry shortly' },
} as const satisfies ErrorCatalogue;
