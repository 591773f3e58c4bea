// The command line of the CNN sample (samples/fashion_mnist_cnn.cpp): CLI11 compiles here, once, not
// with the model each time it changes.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "fashion_mnist_cnn.hpp"

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Train a small CNN on Fashion-MNIST with dl"};
  app.add_option("--epochs", o.epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", o.batch_size, "images per step")->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "peak learning rate of the one-cycle schedule")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--data", o.data, "folder with the Fashion-MNIST IDX files (.gz or plain)");
  app.add_option("--checkpoint", o.checkpoint, "save model, optimizer, scheduler, epoch and RNG state here every epoch");
  app.add_flag("--resume", o.resume, "continue from --checkpoint");
  app.add_option("--plot", o.plot, "write the loss and accuracy curves to this SVG file");
  app.add_option("--seed", o.seed, "random seed (initialisation, shuffling, augmentation, dropout)");
  app.add_option("--device", o.device, "cpu (cuda once dl's CUDA support lands)");
  app.add_option("--limit", o.limit, "use only the first N training and test images (smoke tests)")->check(CLI::NonNegativeNumber);
  app.add_option("--stop-after", o.stop_after, "stop after this epoch, as if interrupted (continue with --resume)")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
