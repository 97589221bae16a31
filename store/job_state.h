// The one definition of job states (DESIGN.md "Job states"). schema.sql's CHECK
// constraint and docs/state-machine.md list the same names; tests/store/job_state_test.cc
// proves they agree.
//
//   queued -> leased -> succeeded | queued (retry) | failed
//   queued -> expired | canceled
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace sluice {

enum class JobState { kQueued, kLeased, kSucceeded, kFailed, kExpired, kCanceled };

inline constexpr std::array<JobState, 6> kAllJobStates = {
    JobState::kQueued, JobState::kLeased,  JobState::kSucceeded,
    JobState::kFailed, JobState::kExpired, JobState::kCanceled};

constexpr std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kLeased:
      return "leased";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kExpired:
      return "expired";
    case JobState::kCanceled:
      return "canceled";
  }
  return "queued";
}

inline std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s : kAllJobStates) {
    if (JobStateName(s) == name) return s;
  }
  return std::nullopt;
}

constexpr bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kExpired ||
         s == JobState::kCanceled;
}

}  // namespace sluice
