// Placeholder: replaced by the server implementation.
namespace sluice::server {}
