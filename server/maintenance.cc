#include "server/maintenance.h"

#include <spdlog/spdlog.h>

#include "server/log.h"

namespace sluice {

Result<MaintenanceCounts> Cleaner::RunOnce(Micros now) {
  MaintenanceCounts total;
  for (;;) {
    auto r = store_.Clean(now - retention_, batch_);
    if (!r.ok()) return r;
    total.cleaned += r.value().cleaned;
    if (r.value().cleaned < batch_) break;
  }
  // Intake-limiter keys whose quota is whole again (not counted: they are no jobs).
  for (;;) {
    auto r = store_.CleanLimits(now, batch_);
    if (!r.ok()) return r.error();
    if (r.value() < batch_) return total;
  }
}

MaintenanceLoop::MaintenanceLoop(boost::asio::io_context& io, const Clock& clock,
                                 std::function<void(const MaintenanceCounts&)> on_change)
    : io_(io), clock_(clock), on_change_(std::move(on_change)) {}

void MaintenanceLoop::Every(std::chrono::milliseconds period,
                            std::function<Result<MaintenanceCounts>(Micros)> run_once) {
  tasks_.push_back(
      std::make_unique<Task>(Task{boost::asio::steady_timer(io_), period, std::move(run_once)}));
  Task& t = *tasks_.back();
  t.timer.expires_after(period);
  Arm(t);
}

void MaintenanceLoop::Arm(Task& task) {
  task.timer.async_wait([this, &task](const boost::system::error_code& ec) {
    if (ec) return;
    auto r = task.run_once(clock_.Now());
    if (!r.ok()) {
      LogEvent(spdlog::level::warn, "maintenance_failed", {{"detail", r.error().detail}});
    } else {
      const MaintenanceCounts& c = r.value();
      if (c.leases_requeued + c.leases_failed + c.expired + c.cleaned > 0) on_change_(c);
    }
    task.timer.expires_at(task.timer.expiry() + task.period);  // re-arm from expiry: no drift
    Arm(task);
  });
}

}  // namespace sluice
