// sluice: the admin and operations command line over sluiced's HTTP API (docs/cli.md).
//   sluice [--server URL] [--token T] [--json] COMMAND ...
// The server comes from --server or SLUICE_URL (default http://127.0.0.1:8080), the token
// from --token or, better (argv is visible in ps), SLUICE_TOKEN. The token is never
// printed. Exit codes: 0 ok, 1 the server refused, 2 usage, 3 the server is unreachable.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include "cli/commands.h"
#include "client/connection.h"

namespace {

using sluice::cli::kExitUsage;

// The payload argument of `submit`: JSON text, or "-" for JSON on stdin.
std::optional<nlohmann::json> ReadPayload(const std::string& arg, std::string* why) {
  std::string text = arg;
  if (arg == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *why = std::string("the payload ") + (arg == "-" ? "on stdin " : "") + "is not valid JSON";
    return std::nullopt;
  }
  return j;
}

int Usage(const std::string& message) {
  std::cerr << "sluice: " << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  bool json = false;

  CLI::App cli{"sluice: inspect and operate a sluice job queue server"};
  cli.fallthrough();  // global options are also accepted after the command
  cli.require_subcommand(1);
  cli.add_option("--server", server, "sluiced URL, http://HOST[:PORT]")
      ->envname("SLUICE_URL")
      ->capture_default_str();
  cli.add_option("--token", token, "bearer token (prefer the SLUICE_TOKEN variable)")
      ->envname("SLUICE_TOKEN");
  cli.add_flag("--json", json, "print the server's JSON instead of a table");

  auto* queues = cli.add_subcommand("queues", "every queue: policy, depth, leased, version");

  std::string queue;
  auto* tenants = cli.add_subcommand("tenants", "per-tenant depth and schedule of one queue");
  tenants->add_option("queue", queue, "queue name")->required();

  sluice::cli::JobsQuery jobs_query;
  auto* jobs = cli.add_subcommand("jobs", "list jobs in admission order");
  jobs->add_option("--queue", jobs_query.queue, "only this queue");
  jobs->add_option("--state", jobs_query.state, "only jobs in this state")
      ->check(CLI::IsMember({"queued", "leased", "succeeded", "failed", "expired", "canceled"}));
  jobs->add_option("--limit", jobs_query.limit, "jobs per page (server default 100)")
      ->check(CLI::Range(1, 1000));
  jobs->add_option("--cursor", jobs_query.cursor, "start after this page (next_cursor)");
  jobs->add_flag("--all", jobs_query.all, "follow next_cursor to the last page");

  std::string job_id;
  auto* job = cli.add_subcommand("job", "one job, with blocked_by and estimated_start if queued");
  job->add_option("id", job_id, "job id")->required();

  auto* pause = cli.add_subcommand("pause", "stop dispatching a queue (intake goes on)");
  pause->add_option("queue", queue, "queue name")->required();
  auto* resume = cli.add_subcommand("resume", "restart dispatching a queue");
  resume->add_option("queue", queue, "queue name")->required();

  auto* tokens = cli.add_subcommand("tokens", "create, list and revoke API tokens");
  tokens->require_subcommand(1);
  sluice::cli::TokenSpec token_spec;
  auto* tokens_create = tokens->add_subcommand("create", "mint a token (shown only once)");
  tokens_create
      ->add_option("--scope", token_spec.scopes,
                   "submit, work, admin or metrics (repeat for several)")
      ->required()
      ->check(CLI::IsMember({"submit", "work", "admin", "metrics"}));
  tokens_create->add_option("--tenant", token_spec.tenant, "tenant (required with submit)");
  tokens_create->add_option("--queue", token_spec.queues,
                            "limit a work token to this queue (repeat for several)");
  tokens_create->add_flag("--secret-only", token_spec.secret_only,
                          "print only the token itself, e.g. for TOKEN=$(sluice tokens ...)");
  auto* tokens_list = tokens->add_subcommand("list", "every token, never a secret");
  std::string revoke_id;
  auto* tokens_revoke = tokens->add_subcommand("revoke", "revoke a token by id");
  tokens_revoke->add_option("id", revoke_id, "token id (from tokens list)")->required();

  sluice::cli::SubmitSpec submit_spec;
  std::string payload_arg;
  auto* submit = cli.add_subcommand("submit", "submit one job to a queue");
  submit->add_option("queue", submit_spec.queue, "queue name")->required();
  submit->add_option("payload", payload_arg, "payload JSON, or - to read it from stdin");
  submit->add_option("--cost", submit_spec.cost, "cost units the job weighs (default 1)");
  submit->add_option("--deadline-in-ms", submit_spec.deadline_in_ms,
                     "the job must start within this many ms");
  submit->add_option("--idempotency-key", submit_spec.idempotency_key,
                     "a retry with the same key returns the first job");
  submit
      ->add_option("--retries", submit_spec.retries,
                   "tries again after a 429 queue_full or rate_limited, a 503 or no answer, "
                   "never before Retry-After, with jittered backoff (default 3; 0: never)")
      ->check(CLI::Range(0, 100));
  submit
      ->add_option("--max-wait-s", submit_spec.max_wait_s,
                   "gives up instead when a retry would wait longer (default 60)")
      ->check(CLI::Range(int64_t{0}, int64_t{86400}));

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = cli.exit(e);  // prints help, or the error
    return rc == 0 ? 0 : kExitUsage;
  }

  std::string why;
  auto url = sluice::ParseServerUrl(server, &why);
  if (!url) return Usage(why);
  if (token.empty()) return Usage("a token is required: set SLUICE_TOKEN (or pass --token)");
  if (submit->parsed() && !payload_arg.empty()) {
    submit_spec.payload = ReadPayload(payload_arg, &why);
    if (!submit_spec.payload) return Usage(why);
  }

  sluice::Connection api(*url, token);
  sluice::cli::Commands commands(api, {std::cout, std::cerr, json});
  int rc = kExitUsage;
  if (queues->parsed()) rc = commands.Queues();
  if (tenants->parsed()) rc = commands.Tenants(queue);
  if (jobs->parsed()) rc = commands.Jobs(jobs_query);
  if (job->parsed()) rc = commands.Job(job_id);
  if (pause->parsed()) rc = commands.SetPaused(queue, true);
  if (resume->parsed()) rc = commands.SetPaused(queue, false);
  if (tokens_create->parsed()) rc = commands.CreateToken(token_spec);
  if (tokens_list->parsed()) rc = commands.ListTokens();
  if (tokens_revoke->parsed()) rc = commands.RevokeToken(revoke_id);
  if (submit->parsed()) rc = commands.Submit(submit_spec);
  std::cout.flush();
  return rc;
}
