/* samples/mandelbrot: the Mandelbrot set by tasks, one task per band of rows. Rows that cross the
 * set cost up to --iterations steps per pixel and rows far from it a few, so bands differ in cost
 * by orders of magnitude: static placement leaves nodes idle, and the task runtime balances them
 * (docs/tasks.md). Each task writes its rows into the shared image `mandelbrot_image`, homed
 * across the nodes; main reads the whole image after lmdx_wait, the acquire of every task's end.
 *
 * main checks every pixel against a sequential computation and prints `verified`, or the first
 * pixel that differs and exits 1.
 *
 *   ./lmdx run mandelbrot -n 2 [--protocol P] [-- --width 1024 --height 768 --iterations 2000]
 */
#include <lmdx/lmdx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "samples/common/sample.h"

struct band {
  int first_row;
  int end_row;
  int width;
  int height;
  int iterations;
};

/* Steps before the orbit of the pixel's point leaves the disc of radius 2 (at most iterations),
 * over the window [-2.2, 0.8] x [-1.2, 1.2]. */
static uint16_t escape_time(int x, int y, int width, int height, int iterations) {
  double c_re = -2.2 + 3.0 * x / width;
  double c_im = -1.2 + 2.4 * y / height;
  double re = 0.0;
  double im = 0.0;
  int step = 0;
  while (step < iterations && re * re + im * im <= 4.0) {
    double next = re * re - im * im + c_re;
    im = 2.0 * re * im + c_im;
    re = next;
    step++;
  }
  return (uint16_t)step;
}

static uint16_t* image_of(int width, int height) {
  return (uint16_t*)sample_shared("mandelbrot", "mandelbrot_image",
                                  (size_t)width * (size_t)height * sizeof(uint16_t));
}

static void band_task(void* arg) {
  const struct band* band = (const struct band*)arg;
  uint16_t* image = image_of(band->width, band->height);
  for (int y = band->first_row; y < band->end_row; y++) {
    for (int x = 0; x < band->width; x++) {
      image[(size_t)y * band->width + x] =
          escape_time(x, y, band->width, band->height, band->iterations);
    }
  }
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int width = 1024;
  int height = 768;
  int iterations = 2000;
  int rows_per_task = 4;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"width", &width, 8, 16384, "pixels per row"},
      {"height", &height, 8, 16384, "rows"},
      {"iterations", &iterations, 1, 65535, "steps at most per pixel"},
      {"rows-per-task", &rows_per_task, 1, 16384, "rows each task computes"},
  };
  int parsed = sample_parse_flags("mandelbrot", argc, argv, flags, 4, &wrong_result);
  if (parsed >= 0) return parsed;

  uint16_t* image = image_of(width, height);
  double start = sample_now();
  int tasks = 0;
  for (int first = 0; first < height; first += rows_per_task) {
    struct band band = {first, first + rows_per_task < height ? first + rows_per_task : height,
                        width, height, iterations};
    lmdx_spawn_copy(band_task, &band, sizeof band);
    tasks++;
  }
  lmdx_wait();
  double seconds = sample_now() - start;
  if (wrong_result) image[(size_t)(height / 2) * width + width / 3] ^= 1;

  double sequential_start = sample_now();
  long long steps = 0;
  for (int y = 0; y < height; y++) {
    for (int x = 0; x < width; x++) {
      uint16_t expected = escape_time(x, y, width, height, iterations);
      uint16_t got = image[(size_t)y * width + x];
      steps += expected;
      if (got != expected) {
        printf("mandelbrot: pixel (%d, %d) is %u, expected %u\n", x, y, got, expected);
        return 1;
      }
    }
  }
  double sequential = sample_now() - sequential_start;
  printf(
      "mandelbrot %dx%d, %d iterations, %d tasks on %d nodes (%s): %.3f s "
      "(one thread, no tasks: %.3f s; %lld steps)\n",
      width, height, iterations, tasks, lmdx_size(), sample_protocol(image), seconds, sequential,
      steps);
  printf("verified\n");
  return 0;
}
