# shellcheck shell=bash
# What the demos share (sourced by scripts/demo.sh and scripts/cluster-demo.sh).

# demo_tokens: makes, through the caller's admin() (curl with the admin token) on $URL,
# the work token WORK and a submit token for each tenant of examples/sluice.json,
# exported as SLUICE_TOKEN_ACME, SLUICE_TOKEN_GLOBEX and SLUICE_TOKEN_INITECH: tokens
# travel in the environment, never on a command line.
demo_tokens() {
  token() { admin -X POST "$URL/v1/admin/tokens" -d "$1" | jq -r .token; }
  # shellcheck disable=SC2034  # for the caller
  WORK=$(token '{"scopes":["work"]}')
  export SLUICE_TOKEN_ACME SLUICE_TOKEN_GLOBEX SLUICE_TOKEN_INITECH
  SLUICE_TOKEN_ACME=$(token '{"scopes":["submit"],"tenant":"acme"}')
  SLUICE_TOKEN_GLOBEX=$(token '{"scopes":["submit"],"tenant":"globex"}')
  SLUICE_TOKEN_INITECH=$(token '{"scopes":["submit"],"tenant":"initech"}')
}
