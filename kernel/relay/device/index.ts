// RFC 8628 device authorization of the relay (`svc login`, `svc login --device`): the CLI's
// endpoints and the approval page.
export { createDeviceCode, decideUserCode, pollDeviceCode, normalizeUserCode, DEVICE_CODE_TTL_SECONDS, DEVICE_POLL_INTERVAL_SECONDS, SLOW_DOWN_STEP_SECONDS, USER_CODE_ALPHABET, DEVICE_PAT_NAME, type DeviceCodePair, type PollOutcome } from './store.ts';
export { registerDeviceApiRoutes, DEVICE_GRANT_TYPE, DEVICE_CODES_PER_IP_RPM, DEVICE_POLLS_PER_IP_RPM, type DeviceRouteOptions } from './routes.ts';
export { registerDevicePage, DEVICE_DECISIONS_PER_IP_RPM } from './page.ts';
