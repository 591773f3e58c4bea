// Must NOT compile: torch::save / torch::load of an optimizer libtorch has no archive for (Rprop), and
// libtorch's param_groups() through the base torch::optim::Optimizer&. The meson test
// 'static_torch_save_optimizer' checks that each names what to write instead (dl's optimizer state
// dict; the algorithm's class, or get_lr / set_lr).
#include <dl/torch.hpp>

int main() {
  torch::nn::Linear fc(2, 1);
  torch::optim::Rprop opt(fc->parameters(), 0.1);
  torch::save(opt, "opt.pt");
  torch::load(opt, "opt.pt");
  torch::optim::Optimizer& base = opt;
  for (auto& group : base.param_groups()) (void)group;
}
