#include "common/time.h"

#include <chrono>
#include <cstdio>

namespace sluice {
namespace {

constexpr int64_t kSecondsPerDay = 86400;

bool IsLeapYear(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct CivilDate {
  int64_t year;
  unsigned month;
  unsigned day;
};

// The civil date of a day count since 1970-01-01 (Hinnant's civil_from_days).
CivilDate CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return CivilDate{static_cast<int64_t>(yoe) + era * 400 + (m <= 2), m, d};
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos > s.size() || n > s.size() - pos) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Longest fraction accepted: nanoseconds. More digits are no real clock's precision.
constexpr size_t kMaxFractionDigits = 9;

}  // namespace

std::string FormatRfc3339(Micros t) {
  t = ClampTime(t);
  // Floor division, so times before 1970 print the second they fall in.
  int64_t secs = t / kMicrosPerSecond;
  int64_t rem = t % kMicrosPerSecond;
  if (rem < 0) {
    rem += kMicrosPerSecond;
    secs -= 1;
  }
  int64_t days = secs / kSecondsPerDay;
  int64_t sod = secs % kSecondsPerDay;
  if (sod < 0) {
    sod += kSecondsPerDay;
    days -= 1;
  }
  const CivilDate date = CivilFromDays(days);
  char buf[64];  // 24 used; the compiler cannot see the ranges
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(date.year),
                date.month, date.day, static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                static_cast<int>(sod % 60), static_cast<int>(rem / kMicrosPerMilli));
  return buf;
}

std::optional<Micros> ParseRfc3339(std::string_view s) {
  int y, mo, d, h, mi, se;
  if (s.size() < 20 || !Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || se > 59) {
    return std::nullopt;
  }
  size_t pos = 19;
  Micros frac = 0;
  if (s[pos] == '.') {
    ++pos;
    const size_t start = pos;
    Micros scale = 100000;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (pos - start == kMaxFractionDigits) return std::nullopt;
      frac += (s[pos] - '0') * scale;  // digits past microseconds have scale 0
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_s = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  const int64_t secs = days * kSecondsPerDay + h * 3600 + mi * 60 + se - offset_s;
  // |secs| < 4e11: no overflow. The offset may carry a year-0000 or year-9999 local
  // time outside the range.
  const Micros t = secs * kMicrosPerSecond + frac;
  if (t < kMinTime || t > kMaxTime) return std::nullopt;
  return t;
}

Micros WallNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sluice
