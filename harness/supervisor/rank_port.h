#pragma once
// The rendezvous port of a world_size > 1 cell: chosen by the supervisor so
// that cells running side by side never share one. The kernel hands out a
// free port (bind to port 0); the supervisor then keeps it reserved for the
// cell's life, so two of its own cells never get the same one even if the
// first cell's rank 0 has not bound it yet.
namespace harness::supervisor {

class PortLease {
 public:
  PortLease();   // throws std::runtime_error when no port can be had
  ~PortLease();  // returns the port to the pool
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  int port() const { return port_; }

 private:
  int port_ = 0;
};

}  // namespace harness::supervisor
