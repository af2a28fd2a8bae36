// Placeholder: replaced by the agent implementation.
namespace sluice::agent {}
